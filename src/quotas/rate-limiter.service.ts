import { Injectable, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';
import { EnvironmentVariables } from '../config/env.schema';
import { RateLimitRepository } from './rate-limit.repository';
import { RequestRateLimit } from './rate-limit';
import { SharedCounts } from './shared-counts';

/**
 * The per-key request rate limit (`SVC_RATE_LIMIT_RPM` per UTC minute), built like the steps' quotas:
 * counted in memory (no SQL per request), shared between replicas every sync interval (SharedCounts).
 */
@Injectable()
export class RateLimiter implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly limit: RequestRateLimit;
  private readonly counts: SharedCounts;

  constructor(
    repository: RateLimitRepository,
    private readonly env: EnvironmentVariables,
  ) {
    this.limit = new RequestRateLimit(env.SVC_RATE_LIMIT_RPM);
    this.counts = new SharedCounts(this.limit.counter, repository, RateLimiter.name);
  }

  onApplicationBootstrap(): void {
    if (this.limit.enabled) this.counts.start(this.env.SVC_SYNC_INTERVAL_MS);
  }

  /** Before the database pool closes: stop, and hand this replica's last counts to the others. */
  async onModuleDestroy(): Promise<void> {
    if (this.limit.enabled) await this.counts.stop();
  }

  /** Counts one request of the key; over the limit → 429 `rate_limited` with `Retry-After`. */
  admit(keyId: string): void {
    const decision = this.limit.admit(keyId, Date.now());
    if (decision.allowed) return;
    throw new DomainError(
      'rate_limited',
      `Rate limit reached: this key may make ${this.limit.perMinute} requests per minute. Retry after ${decision.retryAfterSecs} s.`,
      { headers: { 'Retry-After': String(decision.retryAfterSecs) } },
    );
  }

  /** Requests of the key in the current minute as this replica knows them. */
  count(keyId: string): number {
    return this.limit.count(keyId, Date.now());
  }

  sync(): Promise<void> {
    return this.limit.enabled ? this.counts.sync() : Promise.resolve();
  }
}
