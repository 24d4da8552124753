export type BreakerStatus = 'healthy' | 'degraded' | 'recovering' | 'down';

export interface BreakerState {
  status: BreakerStatus;
  consecutiveFailures: number;
  /**
   * While down: when the cooldown ends. While recovering: until when the trial slot is held (by the
   * one real request on trial, or the cheap probe); null or past: the slot is free for the next request.
   */
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
/** How long after the cooldown's end a circuit no request tried gets its cheap probe (decisions §3). */
export const CHEAP_PROBE_AFTER_MS = 5000;

/** Down, or half-open: regular traffic skips the provider. */
const isOpen = (state: BreakerState): boolean => state.status === 'down' || state.status === 'recovering';

/**
 * Pure transitions (state and time in, new state out) so the cache and the shared row obey the same rules.
 * Half-open (decisions §3): once the cooldown is over the first real request is the trial; one holds the slot.
 */
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

  /** A served request resets the counter; an open circuit is closed only by its trial. */
  recordSuccess(state: BreakerState, _now: number): BreakerState {
    if (isOpen(state)) return state;
    return this.initial();
  }

  recordFailure(state: BreakerState, now: number): { state: BreakerState; tripped: boolean } {
    // late answers of requests sent before the trip must not extend the cooldown
    if (isOpen(state)) return { state, tripped: false };
    const consecutiveFailures = state.consecutiveFailures + 1;
    if (consecutiveFailures >= this.threshold) {
      return { state: { status: 'down', consecutiveFailures, openUntil: now + this.cooldownMs }, tripped: true };
    }
    return { state: { status: 'degraded', consecutiveFailures, openUntil: null }, tripped: false };
  }

  /** Whether regular traffic may use the provider; while half-open only the trial goes through. */
  isAvailable(state: BreakerState, _now: number): boolean {
    return !isOpen(state);
  }

  /** The cooldown is over and nobody holds the trial slot (or its holder went unanswered past its hold). */
  trialOpen(state: BreakerState, now: number): boolean {
    if (state.status === 'down') return state.openUntil !== null && now >= state.openUntil;
    return state.status === 'recovering' && (state.openUntil === null || now >= state.openUntil);
  }

  /** Takes the trial slot until `now + holdMs`; the hold's end is also the claim's token. */
  startTrial(state: BreakerState, now: number, holdMs: number): BreakerState {
    if (!this.trialOpen(state, now)) return state;
    return { status: 'recovering', consecutiveFailures: state.consecutiveFailures, openUntil: now + holdMs };
  }

  /** No request took the trial within CHEAP_PROBE_AFTER_MS of the cooldown's end: a cheap call is due. */
  cheapProbeDue(state: BreakerState, now: number): boolean {
    return state.status === 'down' && state.openUntil !== null && now >= state.openUntil + CHEAP_PROBE_AFTER_MS;
  }

  /** The trial's outcome: success closes the circuit (a recovery), failure opens it for another cooldown. */
  recordTrial(state: BreakerState, ok: boolean, now: number): { state: BreakerState; recovered: boolean } {
    if (!isOpen(state)) return { state, recovered: false };
    if (ok) return { state: this.initial(), recovered: true };
    return { state: this.reopen(state, now), recovered: false };
  }

  /**
   * The cheap call's outcome: failure re-opens the circuit; success frees the slot and stays recovering,
   * as an answering endpoint does not show that generation works (the next real request is the trial).
   */
  recordCheapProbe(state: BreakerState, ok: boolean, now: number): BreakerState {
    if (!isOpen(state)) return state;
    return ok ? this.releaseTrial(state) : this.reopen(state, now);
  }

  /** The trial ended with no verdict on the provider (the client left, a refusal of the request): slot free. */
  releaseTrial(state: BreakerState): BreakerState {
    if (state.status !== 'recovering') return state;
    return { status: 'recovering', consecutiveFailures: state.consecutiveFailures, openUntil: null };
  }

  private reopen(state: BreakerState, now: number): BreakerState {
    return { status: 'down', consecutiveFailures: state.consecutiveFailures + 1, openUntil: now + this.cooldownMs };
  }

  view(state: BreakerState, now: number): BreakerView {
    const consecutive_failures = state.consecutiveFailures;
    if (state.status !== 'down') return { status: state.status, consecutive_failures, cooldown_remaining_secs: 0 };
    const remainingMs = (state.openUntil ?? now) - now;
    // the cooldown is over: the next request is the trial
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

/**
 * A provider with several accounts, each with its own circuit (decisions §7): `down` only when every account is (its
 * cooldown the soonest to end), `healthy` when every one is, `recovering` when none serves but one is on trial,
 * otherwise `degraded`; its count is the smallest of the accounts' (what its next call may still meet).
 */
export function combinedView(accounts: BreakerView[]): BreakerView {
  const consecutive_failures = Math.min(...accounts.map((a) => a.consecutive_failures));
  const statuses = accounts.map((a) => a.status);
  if (statuses.every((s) => s === 'down'))
    return {
      status: 'down',
      consecutive_failures,
      cooldown_remaining_secs: Math.min(...accounts.map((a) => a.cooldown_remaining_secs)),
    };
  if (statuses.every((s) => s === 'healthy'))
    return { status: 'healthy', consecutive_failures, cooldown_remaining_secs: 0 };
  const status = statuses.every((s) => s === 'down' || s === 'recovering') ? 'recovering' : 'degraded';
  return { status, consecutive_failures, cooldown_remaining_secs: 0 };
}
