import type { CallSignal } from '../common/call-signal';
import { fail, failoverHarness, hang, rejectionOf, step } from '../../test/support/failover-service';
import { DomainError } from '../common/errors/domain-error';
import { UpstreamFailure, UpstreamOutcome } from '../providers/provider-adapter';

const chain = [step('p1', 'm1'), step('p2', 'm2'), step('p3', 'm3')];
const ok = (provider: string, model: string, level: number) => ({
  provider,
  model,
  level,
  outcome: 'ok',
  latency_ms: expect.any(Number),
});
const failed = (provider: string, model: string, level: number, outcome: string) => ({
  provider,
  model,
  level,
  outcome,
  latency_ms: expect.any(Number),
});
/** A retry on the same step (decisions §3): its record carries its number there. */
const retried = (provider: string, model: string, level: number, outcome: string, attempt = 2) => ({
  ...failed(provider, model, level, outcome),
  attempt,
  retry: true,
});

describe('FailoverService.execute', () => {
  it('returns what the entry step serves, at level 0, with no failover reported', async () => {
    const h = failoverHarness(chain);
    const scope = h.scope();

    await expect(h.failover.execute(scope, 'm1', h.chat)).resolves.toEqual({ text: 'p1' });

    expect(scope.requestedModel).toBe('m1');
    expect(scope.attempts).toEqual([ok('p1', 'm1', 0)]);
    expect(scope.served).toEqual({ provider: 'p1', model: 'm1', level: 0, exhausted: null, attempts: 1 });
    expect(h.calls).toEqual(['p1']);
    expect(h.metrics.attempts).toEqual([['p1', true]]);
    expect(h.metrics.failovers).toEqual([]);
    expect(h.events.failovers).toEqual([]);
    scope.finish({ status: 200 });
    expect(h.usage.records).toEqual([
      expect.objectContaining({ requestId: scope.requestId, provider: 'p1', model: 'm1', fallbackLevel: 0 }),
    ]);
  });

  const provider500: UpstreamOutcome = { kind: 'http', status: 500, message: 'boom' };
  // the transient faults (a 5xx, a refused connection) are tried once more on the step first (decisions §3),
  // each attempt one breaker failure; the others go to the next step at once
  it.each<[string, () => Promise<never>, string, number, number]>([
    ['an HTTP 500', () => Promise.reject(new UpstreamFailure(provider500)), 'HTTP 500', 2, 2],
    ['an HTTP 429', () => Promise.reject(new UpstreamFailure({ kind: 'http', status: 429 })), 'HTTP 429', 1, 1],
    [
      'a refused connection',
      () => Promise.reject(new UpstreamFailure({ kind: 'connection', code: 'ECONNREFUSED' })),
      'connection refused (ECONNREFUSED)',
      2,
      2,
    ],
    [
      'an unexpected error',
      () => Promise.reject(new Error('socket hang up')),
      'connection error: socket hang up',
      1,
      1,
    ],
    [
      'a provider error blaming the request (no breaker failure)',
      () =>
        Promise.reject(new UpstreamFailure({ kind: 'provider_error', code: 1026, message: 'bad', requestFault: true })),
      'provider error 1026: bad',
      1,
      0,
    ],
  ])('fails over from %s on the entry step to the next step', async (_, behaviour, reason, tries, breakerFailures) => {
    const h = failoverHarness(chain);
    h.behave.p1 = behaviour;
    const scope = h.scope();

    await expect(h.failover.execute(scope, 'm1', h.chat)).resolves.toEqual({ text: 'p2' });

    const onP1 =
      tries === 2 ? [failed('p1', 'm1', 0, reason), retried('p1', 'm1', 0, reason)] : [failed('p1', 'm1', 0, reason)];
    expect(scope.attempts).toEqual([...onP1, ok('p2', 'm2', 1)]);
    expect(scope.served).toEqual({
      provider: 'p2',
      model: 'm2',
      level: 1,
      exhausted: { provider: 'p1', reason },
      attempts: tries + 1,
    });
    expect(h.calls).toEqual([...Array<string>(tries).fill('p1'), 'p2']);
    expect(h.circuits.view('p1')).toMatchObject({ consecutive_failures: breakerFailures });
    expect(h.circuits.view('p2')).toMatchObject({ status: 'healthy', consecutive_failures: 0 });
    expect(h.metrics.attempts).toEqual([...Array<[string, boolean]>(tries).fill(['p1', false]), ['p2', true]]);
    expect(h.metrics.failovers).toEqual([['p1', 'p2']]);
    expect(h.events.failovers).toEqual([
      {
        keyId: 'pk_test',
        model: 'm1',
        exhaustedProvider: 'p1',
        activeProvider: 'p2',
        fallbackLevel: 1,
        latencyMs: expect.any(Number),
        requestId: scope.requestId,
      },
    ]);
  });

  it.each([
    // the key's own shorter deadline: the request fails over, the provider is not blamed
    [
      'the step timeout_ms (shorter than the provider timeout)',
      [step('p1', 'm1', { timeout_ms: 40 }), chain[1]],
      {},
      0,
    ],
    // the provider's own deadline: held against its circuit
    ['the provider timeout', chain.slice(0, 2), { p1: 40 }, 1],
  ])('fails over when the entry step exceeds %s', async (_, steps, timeouts, breakerFailures) => {
    const h = failoverHarness(steps, timeouts);
    let signal: CallSignal | undefined;
    h.behave.p1 = (ctx) => {
      signal = ctx.signal;
      return hang(ctx);
    };
    const scope = h.scope();

    await expect(h.failover.execute(scope, 'm1', h.chat)).resolves.toEqual({ text: 'p2' });

    expect(signal?.aborted).toBe(true);
    expect((signal?.reason as Error).name).toBe('TimeoutError');
    expect(scope.attempts).toEqual([failed('p1', 'm1', 0, 'timeout'), ok('p2', 'm2', 1)]);
    expect(scope.attempts[0].latency_ms).toBeGreaterThanOrEqual(35);
    expect(scope.served?.exhausted).toEqual({ provider: 'p1', reason: 'timeout' });
    expect(h.circuits.view('p1').consecutive_failures).toBe(breakerFailures);
  });

  it.each([400, 422])(
    'relays an upstream HTTP %i: upstream_rejected, no next step, no breaker failure',
    async (status) => {
      const h = failoverHarness(chain);
      h.behave.p1 = fail({ kind: 'http', status: 500 });
      h.behave.p2 = fail({ kind: 'http', status, message: 'messages: field required' });
      const scope = h.scope();

      const err = await rejectionOf(h.failover.execute(scope, 'm1', h.chat));

      expect(err).toBeInstanceOf(DomainError);
      expect(err).toMatchObject({
        code: 'upstream_rejected',
        status,
        message: 'p2 rejected the request: messages: field required',
      });
      const alert = {
        message: 'p1 failed (HTTP 500); served by p2 at level 1',
        exhausted_provider: 'p1',
        active_provider: 'p2',
        fallback_level: 1,
      };
      expect((err as DomainError).headers).toEqual({
        'x-svc-provider-used': 'p2',
        'x-svc-is-fallback': 'true',
        'x-svc-fallback-level': '1',
        'x-svc-attempts': '3',
        'x-svc-fallback-alert': JSON.stringify(alert),
        'x-svc-upstream-status': String(status),
      });
      // the 500 is tried once more on p1 (decisions §3); the client's error is not
      expect(h.calls).toEqual(['p1', 'p1', 'p2']);
      expect(scope.attempts).toEqual([
        failed('p1', 'm1', 0, 'HTTP 500'),
        retried('p1', 'm1', 0, 'HTTP 500'),
        failed('p2', 'm2', 1, `HTTP ${status}`),
      ]);
      expect(scope.served).toEqual({
        provider: 'p2',
        model: 'm2',
        level: 1,
        exhausted: { provider: 'p1', reason: 'HTTP 500' },
        attempts: 3,
      });
      expect(h.circuits.view('p1').consecutive_failures).toBe(2);
      expect(h.circuits.view('p2')).toMatchObject({ status: 'healthy', consecutive_failures: 0 });
      expect(h.events.failovers).toEqual([]);
    },
  );

  it('relays an entry step rejection with level 0 headers and no alert', async () => {
    const h = failoverHarness(chain);
    h.behave.p1 = fail({ kind: 'http', status: 400 });

    const err = (await rejectionOf(h.failover.execute(h.scope(), 'm1', h.chat))) as DomainError;

    expect([err.code, err.status, err.message]).toEqual([
      'upstream_rejected',
      400,
      'p1 rejected the request: HTTP 400',
    ]);
    expect(err.headers).toEqual({
      'x-svc-provider-used': 'p1',
      'x-svc-is-fallback': 'false',
      'x-svc-fallback-level': '0',
      'x-svc-attempts': '1',
      'x-svc-upstream-status': '400',
    });
    expect(h.calls).toEqual(['p1']);
  });

  it("relays an upstream's own code and param, with a category of the documented list", async () => {
    const h = failoverHarness(chain);
    h.behave.p1 = fail({
      kind: 'http',
      status: 400,
      message: 'Refused by policy.',
      error: { type: 'moderation_error', code: 'content_policy_violation', param: 'messages' },
    });

    const err = (await rejectionOf(h.failover.execute(h.scope(), 'm1', h.chat))) as DomainError;

    expect(err.code).toBe('upstream_rejected');
    expect(err.toBody()).toEqual({
      error: {
        message: 'Refused by policy.',
        type: 'invalid_request_error',
        param: 'messages',
        code: 'content_policy_violation',
      },
    });
    expect(h.calls).toEqual(['p1']);
  });

  it('sends a step misfit to the next step without a breaker failure, and relays it from the last step', async () => {
    const h = failoverHarness(chain);
    const tooLong = fail({ kind: 'http', status: 400, message: 'long', error: { code: 'context_length_exceeded' } });
    h.behave.p1 = tooLong;
    h.behave.p2 = tooLong;
    h.behave.p3 = tooLong;

    const err = (await rejectionOf(h.failover.execute(h.scope(), 'm1', h.chat))) as DomainError;

    expect(h.calls).toEqual(['p1', 'p2', 'p3']);
    expect([err.status, err.toBody().error.code, err.headers['x-svc-provider-used']]).toEqual([
      400,
      'context_length_exceeded',
      'p3',
    ]);
    for (const provider of ['p1', 'p2', 'p3']) expect(h.circuits.view(provider).consecutive_failures).toBe(0);
  });

  it('answers all_providers_failed (502) naming every failure when every step failed', async () => {
    const h = failoverHarness(chain);
    h.behave.p1 = fail({ kind: 'http', status: 503 });
    h.behave.p2 = fail({ kind: 'connection', code: 'ECONNRESET' });
    h.behave.p3 = fail({ kind: 'timeout' });
    const scope = h.scope();

    const err = (await rejectionOf(h.failover.execute(scope, 'm1', h.chat))) as DomainError;

    const failures = 'p1 (HTTP 503), p2 (connection reset (ECONNRESET)), p3 (timeout)';
    expect(err).toBeInstanceOf(DomainError);
    expect([err.code, err.status, err.message]).toEqual([
      'all_providers_failed',
      502,
      `Every provider failed: ${failures}.`,
    ]);
    expect(err.headers).toEqual({
      'x-svc-provider-used': 'none',
      'x-svc-is-fallback': 'true',
      'x-svc-fallback-level': '2',
      'x-svc-attempts': '5',
      'x-svc-fallback-alert': JSON.stringify({
        message: `all providers failed: ${failures}`,
        exhausted_provider: 'p3',
        active_provider: 'none',
        fallback_level: 2,
      }),
    });
    expect(err.headers['Retry-After']).toBeUndefined();
    expect(scope.served).toBeNull();
    // the 503 and the reset are tried once more on their step, the timeout is not (decisions §3)
    expect(scope.attempts.map((a) => `${a.provider}:${a.level}:${a.outcome}`)).toEqual([
      'p1:0:HTTP 503',
      'p1:0:HTTP 503',
      'p2:1:connection reset (ECONNRESET)',
      'p2:1:connection reset (ECONNRESET)',
      'p3:2:timeout',
    ]);
    expect(['p1', 'p2', 'p3'].map((p) => h.circuits.view(p).consecutive_failures)).toEqual([2, 2, 1]);
    expect(h.metrics.failovers).toEqual([]);
    expect(h.events.failovers).toEqual([]);
  });

  it('stops at a client that left: records client disconnected, rethrows, no next step, no breaker failure', async () => {
    const h = failoverHarness(chain);
    const scope = h.scope();
    h.behave.p1 = (ctx) => {
      setTimeout(() => scope.abort(), 5);
      return hang(ctx);
    };

    const err = await rejectionOf(h.failover.execute(scope, 'm1', h.chat));

    expect(err).not.toBeInstanceOf(DomainError);
    expect(err.message).toBe('client disconnected');
    expect(scope.attempts).toEqual([failed('p1', 'm1', 0, 'client disconnected')]);
    expect(scope.served).toBeNull();
    expect(h.calls).toEqual(['p1']);
    expect(h.circuits.view('p1')).toMatchObject({ status: 'healthy', consecutive_failures: 0 });
    expect(h.metrics.attempts).toEqual([]);
  });

  it("rethrows the gateway's own verdict (a DomainError) as is, trying no other step", async () => {
    const h = failoverHarness(chain);
    const verdict = new DomainError('audio_too_long', 'The audio would be longer than 60 seconds.');
    h.behave.p1 = () => Promise.reject(verdict);
    const scope = h.scope();

    await expect(h.failover.execute(scope, 'm1', h.chat)).rejects.toBe(verdict);

    expect(scope.attempts).toEqual([failed('p1', 'm1', 0, 'audio_too_long')]);
    expect(scope.served).toBeNull();
    expect(h.calls).toEqual(['p1']);
    expect(h.circuits.view('p1').consecutive_failures).toBe(0);
  });

  it('refuses a model no step serves with model_not_supported (400), naming the models and an unconfigured step', async () => {
    const h = failoverHarness([...chain, step('gone', 'm-gone')]);
    const scope = h.scope();

    const [unknown, unconfigured] = [
      (await rejectionOf(h.failover.execute(scope, 'nope', h.chat))) as DomainError,
      (await rejectionOf(h.failover.execute(scope, 'm-gone', h.chat))) as DomainError,
    ];

    for (const [err, model] of [
      [unknown, 'nope'],
      [unconfigured, 'm-gone'],
    ] as const) {
      expect(err).toBeInstanceOf(DomainError);
      expect([err.code, err.status, err.param]).toEqual(['model_not_supported', 400, 'model']);
      expect(err.message).toContain(`The model '${model}' is not served by any chat step`);
      expect(err.message).toContain('Its chat models: m1, m2, m3.');
    }
    expect(unknown.message).not.toContain('was skipped');
    expect(unconfigured.message).toContain(
      "Step chain[3] (provider 'gone', model 'm-gone') was skipped: its provider is not configured (it is not in the gateway configuration).",
    );
    expect(h.calls).toEqual([]);
    expect(scope.attempts).toEqual([]);
  });

  it('serves the step given as planned (a pinned fallback) at its level without reporting a new failover', async () => {
    const h = failoverHarness(chain);
    const planned = h.failover.plan(h.key, 'm1', 'chat').slice(1);
    const scope = h.scope();

    await expect(h.failover.execute(scope, 'm1', h.chat, planned)).resolves.toEqual({ text: 'p2' });

    expect(scope.served).toEqual({ provider: 'p2', model: 'm2', level: 1, exhausted: null, attempts: 1 });
    expect(h.calls).toEqual(['p2']);
    expect(h.events.failovers).toEqual([]);
  });
});
