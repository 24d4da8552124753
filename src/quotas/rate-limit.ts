import { WindowCounter, windowMs, windowStart } from './window-counter';

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSecs: number };

/**
 * Requests per key per UTC minute (a fixed window), counted in memory with the usage caps' counter:
 * a refused request is not counted, and totals read from other replicas raise the local count.
 */
export class RequestRateLimit {
  /** The counts, shared with other replicas by the rate limiter's SharedCounts. */
  readonly counter = new WindowCounter();

  /** `perMinute` 0 means no limit. */
  constructor(readonly perMinute: number) {}

  get enabled(): boolean {
    return this.perMinute > 0;
  }

  /** Counts one request of the key, or refuses it with the whole seconds until the window ends. */
  admit(keyId: string, now: number): RateDecision {
    if (!this.enabled || this.counter.tryConsume(keyId, { requests: this.perMinute, per: 'minute' }, now))
      return { allowed: true };
    const ends = windowStart('minute', now) + windowMs('minute');
    return { allowed: false, retryAfterSecs: Math.max(1, Math.ceil((ends - now) / 1000)) };
  }

  /** Requests of the key admitted in the current window, as far as this replica knows. */
  count(keyId: string, now: number): number {
    return this.counter.count(keyId, 'minute', now);
  }
}
