import { fail, failoverHarness, rejectionOf, step } from '../../test/support/failover-service';
import type { UsageCapDto } from '../config/chain-step.dto';
import { DomainError } from '../common/errors/domain-error';

type Harness = ReturnType<typeof failoverHarness>;
const perMinute: UsageCapDto = { requests: 1, per: 'minute' };
const perHour: UsageCapDto = { requests: 1, per: 'hour' };
/** 50 s before the end of its minute, 3050 s before the end of its hour. */
const T = Date.parse('2025-03-14T15:09:10.000Z');

/** Uses up a step's cap for this window (as earlier requests of the key would have). */
const useUp = (h: Harness, chainIndex: number, cap: UsageCapDto) => h.quotas.tryConsume(h.key.id, chainIndex, cap);

describe('FailoverService.execute: skipped steps', () => {
  afterEach(() => jest.restoreAllMocks());

  it.each<[string, string, (h: Harness) => Promise<unknown>, Array<ReturnType<typeof step>>]>([
    ['no adapter', 'ghost', () => Promise.resolve(), [step('ghost', 'm1'), step('p2', 'm2')]],
    ['circuit open', 'p1', (h) => h.openCircuit('p1'), [step('p1', 'm1'), step('p2', 'm2')]],
    [
      'usage cap reached',
      'p1',
      (h) => Promise.resolve(useUp(h, 0, perMinute)),
      [step('p1', 'm1', { usage_cap: perMinute }), step('p2', 'm2')],
    ],
  ])('skips a step (%s) and serves the next one at level 1', async (reason, skipped, setup, chain) => {
    const h = failoverHarness(chain);
    await setup(h);
    const scope = h.scope();

    await expect(h.failover.execute(scope, 'm1', h.chat)).resolves.toEqual({ text: 'p2' });

    expect(scope.attempts).toEqual([
      { provider: skipped, model: 'm1', level: 0, outcome: `skipped: ${reason}`, latency_ms: null },
      { provider: 'p2', model: 'm2', level: 1, outcome: 'ok', latency_ms: expect.any(Number) },
    ]);
    expect(scope.served).toEqual({
      provider: 'p2',
      model: 'm2',
      level: 1,
      exhausted: { provider: skipped, reason },
      attempts: 1,
    });
    expect(h.calls).toEqual(['p2']);
    expect(h.metrics.attempts).toEqual([['p2', true]]);
    expect(h.metrics.failovers).toEqual([[skipped, 'p2']]);
    expect(h.events.failovers).toEqual([
      {
        keyId: 'pk_test',
        model: 'm1',
        exhaustedProvider: skipped,
        activeProvider: 'p2',
        fallbackLevel: 1,
        latencyMs: expect.any(Number),
        requestId: scope.requestId,
      },
    ]);
  });

  it('counts a capped step: served while under its cap, skipped once it is reached (the event only then)', async () => {
    const h = failoverHarness([step('p1', 'm1', { usage_cap: perMinute }), step('p2', 'm2')]);
    const first = h.scope();
    await expect(h.failover.execute(first, 'm1', h.chat)).resolves.toEqual({ text: 'p1' });
    expect(first.served).toEqual({ provider: 'p1', model: 'm1', level: 0, exhausted: null, attempts: 1 });
    expect(h.events.failovers).toEqual([]);

    const second = h.scope();
    await expect(h.failover.execute(second, 'm1', h.chat)).resolves.toEqual({ text: 'p2' });
    expect(second.served?.exhausted).toEqual({ provider: 'p1', reason: 'usage cap reached' });
    expect(h.events.failovers.map((e) => e.requestId)).toEqual([second.requestId]);
  });

  it('records no failover event when a step is skipped and every other step fails', async () => {
    const h = failoverHarness([step('ghost', 'm1'), step('p2', 'm2')]);
    h.behave.p2 = fail({ kind: 'http', status: 502 });

    const err = (await rejectionOf(h.failover.execute(h.scope(), 'm1', h.chat))) as DomainError;

    expect([err.code, err.status]).toEqual(['all_providers_failed', 502]);
    expect(err.message).toBe('Every provider failed: ghost (no adapter), p2 (HTTP 502).');
    expect(err.headers['Retry-After']).toBeUndefined();
    expect(h.events.failovers).toEqual([]);
    expect(h.metrics.failovers).toEqual([]);
  });

  describe('no provider available (every step skipped)', () => {
    const at = (now: number) => jest.spyOn(Date, 'now').mockReturnValue(now);

    /** Runs a request at `now` that skips every step; returns its 503 (after checking it is one). */
    const unavailable = async (h: Harness, now: number): Promise<DomainError> => {
      at(now);
      const scope = h.scope();
      const err = (await rejectionOf(h.failover.execute(scope, 'm1', h.chat))) as DomainError;
      expect(err).toBeInstanceOf(DomainError);
      expect([err.code, err.status]).toEqual(['no_provider_available', 503]);
      expect(h.calls).toEqual([]);
      expect(scope.served).toBeNull();
      expect(scope.attempts.every((a) => a.outcome.startsWith('skipped: ') && a.latency_ms === null)).toBe(true);
      return err;
    };

    it('answers 503 with the exhausted headers and Retry-After = the rest of the circuit cooldown', async () => {
      const h = failoverHarness([step('p1', 'm1'), step('p2', 'm2')]);
      at(T);
      await h.openCircuit('p1');
      at(T + 5_000);
      await h.openCircuit('p2');

      const err = await unavailable(h, T + 12_300);

      // p1 reopens at T+30 s (17.7 s away, rounded up), p2 at T+35 s
      expect(err.headers).toEqual({
        'x-svc-provider-used': 'none',
        'x-svc-is-fallback': 'true',
        'x-svc-fallback-level': '1',
        'x-svc-attempts': '0',
        'x-svc-fallback-alert': JSON.stringify({
          message: 'all providers failed: p1 (circuit open), p2 (circuit open)',
          exhausted_provider: 'p2',
          active_provider: 'none',
          fallback_level: 1,
        }),
        'Retry-After': '18',
      });
      expect(err.message).toContain('Every provider of this request is unavailable');
    });

    it('answers Retry-After 1 for a circuit whose cooldown is over while another request is its trial', async () => {
      const h = failoverHarness([step('p1', 'm1')]);
      at(T);
      await h.openCircuit('p1');
      // the first request after the cooldown is the trial (decisions §3); this one comes while it runs
      at(T + 31_000);
      expect(await h.circuits.admit('p1', 'req_trial')).toBe(true);

      const err = await unavailable(h, T + 31_000);

      expect(h.circuits.view('p1', T + 31_000).cooldown_remaining_secs).toBe(0);
      expect(err.headers['Retry-After']).toBe('1');
    });

    it("answers Retry-After = the seconds left in the soonest cap's window", async () => {
      const h = failoverHarness([step('p1', 'm1', { usage_cap: perHour }), step('p2', 'm2', { usage_cap: perMinute })]);
      at(T);
      useUp(h, 0, perHour);
      useUp(h, 1, perMinute);

      const err = await unavailable(h, T);

      expect(err.headers['Retry-After']).toBe('50');
      expect(JSON.parse(err.headers['x-svc-fallback-alert'])).toMatchObject({
        message: 'all providers failed: p1 (usage cap reached), p2 (usage cap reached)',
      });
    });

    it.each([
      ['the circuit', T, '30'], // cooldown 30 s, 50 s left in the minute
      ['the cap', T + 40_000, '10'], // cooldown 30 s, 10 s left in the minute
    ])('takes the smaller of a cooldown and a cap window (%s wins)', async (_, now, retryAfter) => {
      const h = failoverHarness([step('p1', 'm1'), step('p2', 'm2', { usage_cap: perMinute })]);
      at(now);
      await h.openCircuit('p1');
      useUp(h, 1, perMinute);

      const err = await unavailable(h, now);

      expect(err.headers['Retry-After']).toBe(retryAfter);
    });

    it('sends no Retry-After when no skipped step will come back by itself (no adapter)', async () => {
      const h = failoverHarness([step('ghost', 'm1')]);

      const err = await unavailable(h, T);

      expect(err.headers['Retry-After']).toBeUndefined();
      expect(err.headers['x-svc-provider-used']).toBe('none');
    });
  });
});
