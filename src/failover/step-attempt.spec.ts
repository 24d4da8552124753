import { setTimeout as sleep } from 'node:timers/promises';
import type { AuthenticatedKey } from '../keys/key-directory';
import type { ProviderAdapter } from '../providers/provider-adapter';
import type { PlannedStep } from './chain';
import { FailoverScope } from './failover-scope';
import { attemptWithTimeout, toFailure, type Attempt } from './step-attempt';

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

describe("a stream's deadline in two phases (decisions §3: timeout_ms to the headers, then first_token_timeout_ms)", () => {
  const phased = { ...step, timeoutMs: 300, firstTokenTimeoutMs: 80 };
  const runPhased = (attempt: Attempt<string>): Promise<string> =>
    attemptWithTimeout(new FailoverScope('req_phase', key, 'chat', () => undefined), adapter, phased, attempt);

  it('gives the first token its own deadline from the headers, reported as a first-token timeout', async () => {
    const started = Date.now();
    const attempt: Attempt<string> = async (_, ctx) => {
      await sleep(100); // within timeout_ms
      ctx.deadline?.headersReceived();
      return sleep(500, 'late');
    };
    const err = await runPhased(attempt).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(290);
    expect(toFailure(err, 'req_phase').outcome).toEqual({ kind: 'timeout', afterMs: 80, phase: 'first_token' });
  });

  it('keeps timeout_ms to the headers: a first token in time after slow headers is served', async () => {
    const attempt: Attempt<string> = async (_, ctx) => {
      await sleep(200); // longer than the first-token deadline, within timeout_ms
      ctx.deadline?.headersReceived();
      await sleep(30);
      return 'first chunk';
    };
    await expect(runPhased(attempt)).resolves.toBe('first chunk');
  });

  it('times out at timeout_ms when no headers come', async () => {
    const err = await runPhased(() => sleep(600, 'late')).catch((e: unknown) => e);
    expect(toFailure(err, 'req_phase').outcome).toEqual({ kind: 'timeout', afterMs: 300 });
  });
});
