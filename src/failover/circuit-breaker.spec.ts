import { BreakerState, CHEAP_PROBE_AFTER_MS, CircuitBreaker, combinedView, overallStatus } from './circuit-breaker';

const T0 = 1_700_000_000_000;
const breaker = new CircuitBreaker();
/** How long a trial holds the slot in these cases. */
const HOLD = 60000;

/** Applies `n` consecutive failures from `state`, all at `now`. */
function fail(state: BreakerState, n: number, now = T0): { state: BreakerState; tripped: boolean } {
  let result = { state, tripped: false };
  for (let i = 0; i < n; i++) result = breaker.recordFailure(result.state, now);
  return result;
}

const downAt = (now: number): BreakerState => fail(breaker.initial(), 5, now).state;

describe('CircuitBreaker', () => {
  it('starts healthy with no failures and no cooldown', () => {
    expect(breaker.initial()).toEqual({ status: 'healthy', consecutiveFailures: 0, openUntil: null });
    expect(breaker.isAvailable(breaker.initial(), T0)).toBe(true);
  });

  it('defaults to a threshold of 5 and a cooldown of 30 seconds', () => {
    expect(breaker.threshold).toBe(5);
    expect(breaker.cooldownMs).toBe(30000);
  });

  it('marks the provider degraded after one failure, still serving', () => {
    const { state, tripped } = fail(breaker.initial(), 1);
    expect(state).toEqual({ status: 'degraded', consecutiveFailures: 1, openUntil: null });
    expect(tripped).toBe(false);
    expect(breaker.isAvailable(state, T0)).toBe(true);
  });

  it('stays degraded and available at four consecutive failures', () => {
    const { state, tripped } = fail(breaker.initial(), 4);
    expect(state.status).toBe('degraded');
    expect(state.consecutiveFailures).toBe(4);
    expect(tripped).toBe(false);
    expect(breaker.isAvailable(state, T0)).toBe(true);
  });

  it('opens the circuit at the fifth consecutive failure', () => {
    const { state, tripped } = fail(breaker.initial(), 5);
    expect(state).toEqual({ status: 'down', consecutiveFailures: 5, openUntil: T0 + 30000 });
    expect(tripped).toBe(true);
    expect(breaker.isAvailable(state, T0)).toBe(false);
  });

  it('resets the counter on a success, so four failures, a success and four more do not trip', () => {
    const four = fail(breaker.initial(), 4).state;
    const reset = breaker.recordSuccess(four, T0);
    expect(reset).toEqual({ status: 'healthy', consecutiveFailures: 0, openUntil: null });
    const again = fail(reset, 4);
    expect(again.state.status).toBe('degraded');
    expect(again.tripped).toBe(false);
  });

  it('never mutates the state it is given', () => {
    const start = Object.freeze(breaker.initial());
    const degraded = Object.freeze(breaker.recordFailure(start, T0).state);
    expect(() => breaker.recordSuccess(degraded, T0)).not.toThrow();
    expect(start).toEqual({ status: 'healthy', consecutiveFailures: 0, openUntil: null });
    expect(degraded.consecutiveFailures).toBe(1);
    const down = Object.freeze(downAt(T0));
    const trial = Object.freeze(breaker.startTrial(down, T0 + 30000, HOLD));
    expect(() => breaker.recordTrial(trial, false, T0 + 31000)).not.toThrow();
    expect(() => breaker.recordCheapProbe(trial, true, T0 + 31000)).not.toThrow();
    expect(() => breaker.releaseTrial(trial)).not.toThrow();
    expect(down).toEqual({ status: 'down', consecutiveFailures: 5, openUntil: T0 + 30000 });
    expect(trial).toEqual({ status: 'recovering', consecutiveFailures: 5, openUntil: T0 + 30000 + HOLD });
  });

  it('ignores failures reported while down, so the cooldown is not extended', () => {
    const down = downAt(T0);
    const { state, tripped } = breaker.recordFailure(down, T0 + 10000);
    expect(state).toEqual(down);
    expect(tripped).toBe(false);
  });

  it('ignores failures and successes of other requests while the trial runs', () => {
    const recovering = breaker.startTrial(downAt(T0), T0 + 30000, HOLD);
    expect(breaker.recordFailure(recovering, T0 + 30001)).toEqual({ state: recovering, tripped: false });
    expect(breaker.recordSuccess(recovering, T0 + 30001)).toEqual(recovering);
  });

  it('does not close an open circuit on a late success of an earlier request', () => {
    const down = downAt(T0);
    expect(breaker.recordSuccess(down, T0 + 1000)).toEqual(down);
    expect(breaker.isAvailable(breaker.recordSuccess(down, T0 + 1000), T0 + 1000)).toBe(false);
  });

  it('opens the trial exactly when the cooldown ends, not a millisecond earlier', () => {
    const down = downAt(T0);
    expect(breaker.trialOpen(down, T0 + 29999)).toBe(false);
    expect(breaker.startTrial(down, T0 + 29999, HOLD)).toEqual(down);
    expect(breaker.trialOpen(down, T0 + 30000)).toBe(true);
    expect(breaker.trialOpen(down, T0 + 90000)).toBe(true);
  });

  it('never opens a trial on a closed circuit', () => {
    expect(breaker.trialOpen(breaker.initial(), T0)).toBe(false);
    const degraded = fail(breaker.initial(), 2).state;
    expect(breaker.trialOpen(degraded, T0 + 1e9)).toBe(false);
    expect(breaker.startTrial(degraded, T0, HOLD)).toEqual(degraded);
    expect(breaker.cheapProbeDue(degraded, T0 + 1e9)).toBe(false);
  });

  it('keeps regular traffic away while half-open, and a held slot from a second trial', () => {
    const recovering = breaker.startTrial(downAt(T0), T0 + 30000, HOLD);
    expect(recovering).toEqual({ status: 'recovering', consecutiveFailures: 5, openUntil: T0 + 30000 + HOLD });
    expect(breaker.isAvailable(recovering, T0 + 30000)).toBe(false);
    expect(breaker.trialOpen(recovering, T0 + 30000 + HOLD - 1)).toBe(false);
  });

  it('frees the slot of a trial that stayed unanswered past its hold (its replica died)', () => {
    const recovering = breaker.startTrial(downAt(T0), T0 + 30000, HOLD);
    expect(breaker.trialOpen(recovering, T0 + 30000 + HOLD)).toBe(true);
    expect(breaker.startTrial(recovering, T0 + 30000 + HOLD, HOLD)).toMatchObject({
      status: 'recovering',
      openUntil: T0 + 30000 + 2 * HOLD,
    });
  });

  it('closes the circuit when the trial succeeds and reports the recovery', () => {
    const recovering = breaker.startTrial(downAt(T0), T0 + 30000, HOLD);
    const { state, recovered } = breaker.recordTrial(recovering, true, T0 + 30500);
    expect(state).toEqual({ status: 'healthy', consecutiveFailures: 0, openUntil: null });
    expect(recovered).toBe(true);
    expect(breaker.isAvailable(state, T0 + 30500)).toBe(true);
  });

  it('reports no recovery for a trial verdict on a circuit that is not open', () => {
    const degraded = fail(breaker.initial(), 3).state;
    expect(breaker.recordTrial(degraded, true, T0)).toEqual({ state: degraded, recovered: false });
    expect(breaker.recordCheapProbe(degraded, false, T0)).toEqual(degraded);
  });

  it('re-opens the circuit for a fresh cooldown when the trial fails', () => {
    const recovering = breaker.startTrial(downAt(T0), T0 + 30000, HOLD);
    const { state, recovered } = breaker.recordTrial(recovering, false, T0 + 32000);
    expect(state).toEqual({ status: 'down', consecutiveFailures: 6, openUntil: T0 + 62000 });
    expect(recovered).toBe(false);
    expect(breaker.trialOpen(state, T0 + 61999)).toBe(false);
    expect(breaker.trialOpen(state, T0 + 62000)).toBe(true);
  });

  it('makes the cheap probe due only when no trial came within 5 s of the cooldown end', () => {
    const down = downAt(T0);
    expect(CHEAP_PROBE_AFTER_MS).toBe(5000);
    expect(breaker.cheapProbeDue(down, T0 + 34999)).toBe(false);
    expect(breaker.cheapProbeDue(down, T0 + 35000)).toBe(true);
    expect(breaker.cheapProbeDue(breaker.startTrial(down, T0 + 35000, HOLD), T0 + 99000)).toBe(false);
  });

  it('keeps the circuit recovering with a free slot after a cheap probe succeeds, and no further cheap probe', () => {
    const probing = breaker.startTrial(downAt(T0), T0 + 35000, HOLD);
    const state = breaker.recordCheapProbe(probing, true, T0 + 35100);
    expect(state).toEqual({ status: 'recovering', consecutiveFailures: 5, openUntil: null });
    expect(breaker.isAvailable(state, T0 + 35100)).toBe(false);
    expect(breaker.trialOpen(state, T0 + 35100)).toBe(true);
    expect(breaker.cheapProbeDue(state, T0 + 1e9)).toBe(false);
    expect(breaker.view(state, T0 + 35100)).toEqual({
      status: 'recovering',
      consecutive_failures: 5,
      cooldown_remaining_secs: 0,
    });
  });

  it('re-opens the circuit for a fresh cooldown when the cheap probe fails', () => {
    const probing = breaker.startTrial(downAt(T0), T0 + 35000, HOLD);
    expect(breaker.recordCheapProbe(probing, false, T0 + 36000)).toEqual({
      status: 'down',
      consecutiveFailures: 6,
      openUntil: T0 + 66000,
    });
  });

  it('frees the slot of a trial that ended with no verdict on the provider', () => {
    const recovering = breaker.startTrial(downAt(T0), T0 + 30000, HOLD);
    const released = breaker.releaseTrial(recovering);
    expect(released).toEqual({ status: 'recovering', consecutiveFailures: 5, openUntil: null });
    expect(breaker.trialOpen(released, T0 + 30001)).toBe(true);
    expect(breaker.releaseTrial(downAt(T0))).toEqual(downAt(T0));
  });

  it('honours a configured threshold and cooldown', () => {
    const strict = new CircuitBreaker(2, 1000);
    const once = strict.recordFailure(strict.initial(), T0);
    expect(once.tripped).toBe(false);
    const twice = strict.recordFailure(once.state, T0);
    expect(twice).toEqual({ state: { status: 'down', consecutiveFailures: 2, openUntil: T0 + 1000 }, tripped: true });
  });

  it('trips at the first failure with a threshold of 1', () => {
    const single = new CircuitBreaker(1, 1000);
    expect(single.recordFailure(single.initial(), T0).tripped).toBe(true);
  });

  it('refuses a threshold below 1 or a negative cooldown', () => {
    expect(() => new CircuitBreaker(0)).toThrow(RangeError);
    expect(() => new CircuitBreaker(5, -1)).toThrow(RangeError);
  });
});

describe('CircuitBreaker.view', () => {
  it('reports healthy and degraded providers with no cooldown', () => {
    expect(breaker.view(breaker.initial(), T0)).toEqual({
      status: 'healthy',
      consecutive_failures: 0,
      cooldown_remaining_secs: 0,
    });
    expect(breaker.view(fail(breaker.initial(), 3).state, T0)).toEqual({
      status: 'degraded',
      consecutive_failures: 3,
      cooldown_remaining_secs: 0,
    });
  });

  it('counts the cooldown down in whole seconds, rounding up', () => {
    const down = downAt(T0);
    expect(breaker.view(down, T0)).toEqual({ status: 'down', consecutive_failures: 5, cooldown_remaining_secs: 30 });
    expect(breaker.view(down, T0 + 1)).toMatchObject({ status: 'down', cooldown_remaining_secs: 30 });
    expect(breaker.view(down, T0 + 1000)).toMatchObject({ status: 'down', cooldown_remaining_secs: 29 });
    expect(breaker.view(down, T0 + 29999)).toMatchObject({ status: 'down', cooldown_remaining_secs: 1 });
  });

  it('reports recovering with no cooldown once the cooldown is over', () => {
    const down = downAt(T0);
    expect(breaker.view(down, T0 + 30000)).toEqual({
      status: 'recovering',
      consecutive_failures: 5,
      cooldown_remaining_secs: 0,
    });
    expect(breaker.view(down, T0 + 99000)).toMatchObject({ status: 'recovering', cooldown_remaining_secs: 0 });
  });

  it('reports a running trial as recovering with no cooldown', () => {
    const recovering = breaker.startTrial(downAt(T0), T0 + 30000, HOLD);
    expect(breaker.view(recovering, T0 + 30001)).toEqual({
      status: 'recovering',
      consecutive_failures: 5,
      cooldown_remaining_secs: 0,
    });
  });
});

describe('overallStatus', () => {
  it('is operational when every provider is healthy, or there is none', () => {
    expect(overallStatus(['healthy', 'healthy'])).toBe('operational');
    expect(overallStatus([])).toBe('operational');
  });

  it('is down when every provider is down', () => {
    expect(overallStatus(['down'])).toBe('down');
    expect(overallStatus(['down', 'down', 'down'])).toBe('down');
  });

  it('is degraded for any other mix', () => {
    expect(overallStatus(['healthy', 'degraded'])).toBe('degraded');
    expect(overallStatus(['healthy', 'down'])).toBe('degraded');
    expect(overallStatus(['recovering'])).toBe('degraded');
    expect(overallStatus(['down', 'recovering'])).toBe('degraded');
  });
});

describe('the combined view of a provider with accounts (decisions §7)', () => {
  const healthy = { status: 'healthy' as const, consecutive_failures: 0, cooldown_remaining_secs: 0 };
  const down = (secs: number) => ({ status: 'down' as const, consecutive_failures: 5, cooldown_remaining_secs: secs });
  const recovering = { status: 'recovering' as const, consecutive_failures: 5, cooldown_remaining_secs: 0 };

  it('is down only when every account is, with the soonest cooldown', () => {
    expect(combinedView([down(20), down(7)])).toEqual(down(7));
    expect(combinedView([down(20), healthy])).toEqual({ ...healthy, status: 'degraded' });
  });

  it('is healthy when every account is, recovering when none serves but one is on trial', () => {
    expect(combinedView([healthy, healthy])).toEqual(healthy);
    expect(combinedView([down(20), recovering])).toEqual({ ...recovering, status: 'recovering' });
  });
});
