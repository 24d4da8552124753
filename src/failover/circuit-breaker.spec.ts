import { BreakerState, CircuitBreaker, overallStatus } from './circuit-breaker';

const T0 = 1_700_000_000_000;
const breaker = new CircuitBreaker();

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
    expect(() => breaker.recordProbe(breaker.startProbe(down, T0 + 30000), false, T0 + 31000)).not.toThrow();
    expect(down).toEqual({ status: 'down', consecutiveFailures: 5, openUntil: T0 + 30000 });
  });

  it('ignores failures reported while down, so the cooldown is not extended', () => {
    const down = downAt(T0);
    const { state, tripped } = breaker.recordFailure(down, T0 + 10000);
    expect(state).toEqual(down);
    expect(tripped).toBe(false);
  });

  it('ignores failures and successes reported while the probe runs', () => {
    const recovering = breaker.startProbe(downAt(T0), T0 + 30000);
    expect(breaker.recordFailure(recovering, T0 + 30001)).toEqual({ state: recovering, tripped: false });
    expect(breaker.recordSuccess(recovering, T0 + 30001)).toEqual(recovering);
  });

  it('does not close an open circuit on a late success of an earlier request', () => {
    const down = downAt(T0);
    expect(breaker.recordSuccess(down, T0 + 1000)).toEqual(down);
    expect(breaker.isAvailable(breaker.recordSuccess(down, T0 + 1000), T0 + 1000)).toBe(false);
  });

  it('makes the probe due exactly when the cooldown ends, not a millisecond earlier', () => {
    const down = downAt(T0);
    expect(breaker.probeDue(down, T0 + 29999)).toBe(false);
    expect(breaker.probeDue(down, T0 + 30000)).toBe(true);
    expect(breaker.probeDue(down, T0 + 90000)).toBe(true);
  });

  it('never makes a probe due for a closed circuit', () => {
    expect(breaker.probeDue(breaker.initial(), T0)).toBe(false);
    expect(breaker.probeDue(fail(breaker.initial(), 4).state, T0 + 1e9)).toBe(false);
  });

  it('keeps regular traffic away while half-open', () => {
    const recovering = breaker.startProbe(downAt(T0), T0 + 30000);
    expect(recovering.status).toBe('recovering');
    expect(breaker.isAvailable(recovering, T0 + 30000)).toBe(false);
  });

  it('does not start a second probe while one is in flight', () => {
    const recovering = breaker.startProbe(downAt(T0), T0 + 30000);
    expect(breaker.probeDue(recovering, T0 + 35000)).toBe(false);
  });

  it('retries a probe that stayed unanswered for a whole cooldown', () => {
    const recovering = breaker.startProbe(downAt(T0), T0 + 30000);
    expect(breaker.probeDue(recovering, T0 + 60000)).toBe(true);
    expect(breaker.startProbe(recovering, T0 + 60000)).toEqual({
      status: 'recovering',
      consecutiveFailures: 5,
      openUntil: T0 + 90000,
    });
  });

  it('does not start a probe on a closed circuit', () => {
    const degraded = fail(breaker.initial(), 2).state;
    expect(breaker.startProbe(degraded, T0)).toEqual(degraded);
  });

  it('closes the circuit when the probe succeeds and reports the recovery', () => {
    const recovering = breaker.startProbe(downAt(T0), T0 + 30000);
    const { state, recovered } = breaker.recordProbe(recovering, true, T0 + 30500);
    expect(state).toEqual({ status: 'healthy', consecutiveFailures: 0, openUntil: null });
    expect(recovered).toBe(true);
    expect(breaker.isAvailable(state, T0 + 30500)).toBe(true);
  });

  it('reports a recovery for a probe that succeeds straight from down', () => {
    expect(breaker.recordProbe(downAt(T0), true, T0 + 30000).recovered).toBe(true);
  });

  it('does not report a recovery when the circuit was not open', () => {
    const { state, recovered } = breaker.recordProbe(fail(breaker.initial(), 3).state, true, T0);
    expect(recovered).toBe(false);
    expect(state.status).toBe('healthy');
  });

  it('re-opens the circuit for a fresh cooldown when the probe fails', () => {
    const recovering = breaker.startProbe(downAt(T0), T0 + 30000);
    const { state, recovered } = breaker.recordProbe(recovering, false, T0 + 32000);
    expect(state).toEqual({ status: 'down', consecutiveFailures: 6, openUntil: T0 + 62000 });
    expect(recovered).toBe(false);
    expect(breaker.probeDue(state, T0 + 61999)).toBe(false);
    expect(breaker.probeDue(state, T0 + 62000)).toBe(true);
  });

  it('counts a failed probe on a closed circuit as one ordinary failure', () => {
    const { state } = breaker.recordProbe(fail(breaker.initial(), 4).state, false, T0);
    expect(state).toEqual({ status: 'down', consecutiveFailures: 5, openUntil: T0 + 30000 });
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

  it('reports a running probe as recovering with no cooldown', () => {
    const recovering = breaker.startProbe(downAt(T0), T0 + 30000);
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
