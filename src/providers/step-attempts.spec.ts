import { setTimeout as sleep } from 'node:timers/promises';
import type { CallAbort } from '../common/call-signal';
import { UpstreamFailure, type ProviderAdapter } from './provider-adapter';
import {
  NEXT_STEP,
  runAttempt,
  runStep,
  toFailure,
  type AttemptOwner,
  type StepAttempt,
  type StepConduct,
  type StepListener,
} from './step-attempts';

type Attempt<T> = StepAttempt<T, StepConduct>;

/** A request as the executor sees it; `leave()` is its client going away. */
function owner(requestId: string): AttemptOwner & { leave(): void } {
  const listeners = new Set<(reason: Error) => void>();
  let gone: Error | null = null;
  return {
    requestId,
    key: { id: 'pk_wait' },
    trace: null,
    get aborted() {
      return gone !== null;
    },
    onAbort(listener) {
      if (gone) listener(gone);
      else listeners.add(listener);
      return () => listeners.delete(listener);
    },
    leave() {
      gone = new Error('client disconnected');
      for (const listener of listeners) listener(gone);
    },
  };
}

const step: StepConduct = {
  model: 'm',
  timeoutMs: 60,
  firstTokenTimeoutMs: 60,
  streamIdleTimeoutMs: 20000,
  retries: 0,
  retryAfterMaxMs: 5000,
};
const adapter = {} as ProviderAdapter;
const run = (attempt: Attempt<string>): Promise<string> => runAttempt(owner('req_wait'), adapter, step, attempt);

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
    runAttempt(owner('req_phase'), adapter, phased, attempt);

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

describe("a step's attempts (decisions §3: retries that listen to the upstream)", () => {
  const http500 = (): UpstreamFailure => new UpstreamFailure({ kind: 'http', status: 500, message: 'boom' });

  /** A listener that records what it hears and lets every retry the rule allows go. */
  function listening(events: string[], allow = true): StepListener<string> {
    return {
      attempting: (number) => events.push(`attempt ${number}`),
      served: (value, number) => (events.push(`served ${value} by ${number}`), null),
      failed: (err, number) => {
        const failure = toFailure(err, 'req_steps');
        events.push(`failed ${number}: ${failure.outcome.kind}`);
        return { failure, reason: failure.outcome.kind };
      },
      again: (wait, reason) => (
        events.push(`again ${wait === null ? 'no' : 'yes'} (${reason})`),
        allow && wait !== null
      ),
    };
  }

  it("hears a stream's headers through the attempt's signal: a reset before them is retried, one after them is not", async () => {
    const reset = (): UpstreamFailure => new UpstreamFailure({ kind: 'connection', code: 'ECONNRESET' });
    // as SseReading does on a 2xx's headers: the signal's deadline is told, then the body breaks
    const afterHeaders: Attempt<string> = (_, ctx) => {
      (ctx.signal as CallAbort).phases?.headersReceived();
      return Promise.reject(reset());
    };
    const retried = { ...step, retries: 1 };
    const after: string[] = [];
    await expect(runStep(owner('r'), adapter, retried, afterHeaders, listening(after))).resolves.toBe(NEXT_STEP);
    expect(after).toEqual(['attempt 1', 'failed 1: connection', 'again no (connection)']);
    const before: string[] = [];
    await expect(runStep(owner('r'), adapter, retried, () => Promise.reject(reset()), listening(before))).resolves.toBe(
      NEXT_STEP,
    );
    expect(before.slice(0, 4)).toEqual(['attempt 1', 'failed 1: connection', 'again yes (connection)', 'attempt 2']);
  });

  it('tries a transient fault again after a jittered wait, and serves from the retry', async () => {
    const events: string[] = [];
    let calls = 0;
    const attempt: Attempt<string> = () => (++calls === 1 ? Promise.reject(http500()) : Promise.resolve('ok'));
    const started = Date.now();
    await expect(runStep(owner('r'), adapter, { ...step, retries: 1 }, attempt, listening(events))).resolves.toBe('ok');
    expect(Date.now() - started).toBeGreaterThanOrEqual(95);
    expect(events).toEqual(['attempt 1', 'failed 1: http', 'again yes (http)', 'attempt 2', 'served ok by 2']);
  });

  it('gives the step up once its retries are spent, or for a fault no retry cures (a timeout)', async () => {
    const spent: string[] = [];
    await expect(
      runStep(owner('r'), adapter, { ...step, retries: 1 }, () => Promise.reject(http500()), listening(spent)),
    ).resolves.toBe(NEXT_STEP);
    expect(spent.filter((e) => e.startsWith('attempt'))).toEqual(['attempt 1', 'attempt 2']);
    expect(spent[spent.length - 1]).toBe('again no (http)');

    const timedOut: string[] = [];
    await expect(
      runStep(owner('r'), adapter, { ...step, retries: 2 }, () => sleep(200, 'late'), listening(timedOut)),
    ).resolves.toBe(NEXT_STEP);
    expect(timedOut).toEqual(['attempt 1', 'failed 1: timeout', 'again no (timeout)']);
  });

  it('retries only while the failover core says so (an open circuit), and not for a client who left', async () => {
    const refused: string[] = [];
    await expect(
      runStep(owner('r'), adapter, { ...step, retries: 3 }, () => Promise.reject(http500()), listening(refused, false)),
    ).resolves.toBe(NEXT_STEP);
    expect(refused.filter((e) => e.startsWith('attempt'))).toEqual(['attempt 1']);

    const request = owner('r');
    const attempt: Attempt<string> = () => {
      setTimeout(() => request.leave(), 20); // during the wait before the retry
      return Promise.reject(http500());
    };
    const left: string[] = [];
    await expect(runStep(request, adapter, { ...step, retries: 1 }, attempt, listening(left))).rejects.toBeInstanceOf(
      UpstreamFailure,
    );
    expect(left.filter((e) => e.startsWith('attempt'))).toEqual(['attempt 1']);
  });

  it("a thrown verdict of the listener's ends the request at once", async () => {
    const listener: StepListener<string> = {
      ...listening([]),
      failed: () => {
        throw new Error('the client’s own error');
      },
    };
    await expect(
      runStep(owner('r'), adapter, { ...step, retries: 3 }, () => Promise.reject(http500()), listener),
    ).rejects.toThrow('the client’s own error');
  });
});
