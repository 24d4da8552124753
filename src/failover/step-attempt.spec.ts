import { setTimeout as sleep } from 'node:timers/promises';
import type { AuthenticatedKey } from '../keys/key-directory';
import type { ProviderAdapter } from '../providers/provider-adapter';
import type { PlannedStep } from './chain';
import { FailoverScope } from './failover-scope';
import { attemptWithTimeout, type Attempt } from './step-attempt';

const key = { id: 'pk_wait', chain: [] } as unknown as AuthenticatedKey;
const step = { provider: 'espeak', model: 'm', timeoutMs: 60 } as unknown as PlannedStep;
const adapter = {} as ProviderAdapter;
const run = (attempt: Attempt<string>): Promise<string> =>
  attemptWithTimeout(new FailoverScope('req_wait', key, 'speech', () => undefined), adapter, step, attempt);

describe("a step's deadline and a local wait (decisions §11: a job's deadline starts when a worker takes it)", () => {
  it('gives the attempt its key', async () => {
    await expect(run((_, ctx) => Promise.resolve(ctx.keyId ?? 'none'))).resolves.toBe('pk_wait');
  });

  it('times out an attempt slower than the step timeout', async () => {
    await expect(run(() => sleep(200, 'late'))).rejects.toMatchObject({ name: 'TimeoutError' });
  });

  it('does not count a held wait, and gives the whole timeout again from the restart', async () => {
    const attempt: Attempt<string> = async (_, ctx) => {
      ctx.deadline?.hold();
      await sleep(200);
      ctx.deadline?.restart();
      await sleep(30);
      return 'spoken';
    };
    await expect(run(attempt)).resolves.toBe('spoken');
  });

  it('times out after the restart like any attempt', async () => {
    const attempt: Attempt<string> = async (_, ctx) => {
      ctx.deadline?.hold();
      await sleep(100);
      ctx.deadline?.restart();
      return sleep(200, 'late');
    };
    await expect(run(attempt)).rejects.toMatchObject({ name: 'TimeoutError' });
  });
});
