export type BreakerStatus = 'healthy' | 'degraded' | 'recovering' | 'down';

export interface BreakerState {
  status: BreakerStatus;
  consecutiveFailures: number;
  /** While down: when the cooldown ends. While recovering: when an unanswered probe counts as lost. */
  openUntil: number | null;
}

/** A provider's entry in `GET /v1/providers/health`. */
export interface BreakerView {
  status: BreakerStatus;
  consecutive_failures: number;
  cooldown_remaining_secs: number;
}

export const DEFAULT_BREAKER_THRESHOLD = 5;
export const DEFAULT_BREAKER_COOLDOWN_MS = 30000;

/** Pure transitions (state and time in, new state out) so the cache and the shared row obey the same rules. */
export class CircuitBreaker {
  constructor(
    readonly threshold = DEFAULT_BREAKER_THRESHOLD,
    readonly cooldownMs = DEFAULT_BREAKER_COOLDOWN_MS,
  ) {
    if (!Number.isInteger(threshold) || threshold < 1) throw new RangeError('threshold must be a positive integer');
    if (!Number.isFinite(cooldownMs) || cooldownMs < 0)
      throw new RangeError('cooldownMs must be a non-negative number');
  }

  initial(): BreakerState {
    return { status: 'healthy', consecutiveFailures: 0, openUntil: null };
  }

  /** A served request resets the counter; an open circuit is closed only by its probe. */
  recordSuccess(state: BreakerState, _now: number): BreakerState {
    if (state.status === 'down' || state.status === 'recovering') return state;
    return this.initial();
  }

  recordFailure(state: BreakerState, now: number): { state: BreakerState; tripped: boolean } {
    // late answers of requests sent before the trip must not extend the cooldown
    if (state.status === 'down' || state.status === 'recovering') return { state, tripped: false };
    const consecutiveFailures = state.consecutiveFailures + 1;
    if (consecutiveFailures >= this.threshold) {
      return { state: { status: 'down', consecutiveFailures, openUntil: now + this.cooldownMs }, tripped: true };
    }
    return { state: { status: 'degraded', consecutiveFailures, openUntil: null }, tripped: false };
  }

  /** Whether regular traffic may use the provider; while half-open only the probe goes through. */
  isAvailable(state: BreakerState, _now: number): boolean {
    return state.status === 'healthy' || state.status === 'degraded';
  }

  /** The cooldown is over, or a probe went unanswered for a whole cooldown (its replica died). */
  probeDue(state: BreakerState, now: number): boolean {
    if (state.status !== 'down' && state.status !== 'recovering') return false;
    return state.openUntil !== null && now >= state.openUntil;
  }

  startProbe(state: BreakerState, now: number): BreakerState {
    if (state.status !== 'down' && state.status !== 'recovering') return state;
    return { status: 'recovering', consecutiveFailures: state.consecutiveFailures, openUntil: now + this.cooldownMs };
  }

  recordProbe(state: BreakerState, ok: boolean, now: number): { state: BreakerState; recovered: boolean } {
    const open = state.status === 'down' || state.status === 'recovering';
    if (ok) return { state: this.initial(), recovered: open };
    if (!open) return { state: this.recordFailure(state, now).state, recovered: false };
    return {
      state: { status: 'down', consecutiveFailures: state.consecutiveFailures + 1, openUntil: now + this.cooldownMs },
      recovered: false,
    };
  }

  view(state: BreakerState, now: number): BreakerView {
    const consecutive_failures = state.consecutiveFailures;
    if (state.status !== 'down') return { status: state.status, consecutive_failures, cooldown_remaining_secs: 0 };
    const remainingMs = (state.openUntil ?? now) - now;
    // the cooldown is over: the probe is about to run
    if (remainingMs <= 0) return { status: 'recovering', consecutive_failures, cooldown_remaining_secs: 0 };
    return { status: 'down', consecutive_failures, cooldown_remaining_secs: Math.ceil(remainingMs / 1000) };
  }
}

export type OverallStatus = 'operational' | 'degraded' | 'down';

/** Health `overall`: operational when every provider is healthy, down when every one is down. */
export function overallStatus(statuses: BreakerStatus[]): OverallStatus {
  if (statuses.every((s) => s === 'healthy')) return 'operational';
  if (statuses.every((s) => s === 'down')) return 'down';
  return 'degraded';
}
