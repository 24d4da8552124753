import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DomainError } from '../common/errors/domain-error';
import { EnvironmentVariables } from '../config/env.schema';
import { windowMs, windowStart } from '../failover/usage-window';
import { RequestRateLimit } from './rate-limit';

/** Old windows are deleted at most this often. */
const CLEANUP_EVERY_MS = 60_000;

/**
 * The per-key request rate limit (`SVC_RATE_LIMIT_RPM` per UTC minute), designed like the usage
 * caps: counted in memory (no SQL per request), and every sync interval each replica adds its
 * increments to `rate_limit_counters` and reads the totals of the current minute. With R replicas a key
 * can exceed its limit by at most what the other R-1 replicas admit in one interval.
 */
@Injectable()
export class RateLimiter implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(RateLimiter.name);
  private readonly limit: RequestRateLimit;
  private timer: NodeJS.Timeout | null = null;
  private syncing: Promise<void> = Promise.resolve();
  private lastCleanup = 0;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly env: EnvironmentVariables,
  ) {
    this.limit = new RequestRateLimit(env.SVC_RATE_LIMIT_RPM);
  }

  onApplicationBootstrap(): void {
    if (!this.limit.enabled) return;
    this.timer = setInterval(() => void this.sync(), this.env.SVC_SYNC_INTERVAL_MS);
    this.timer.unref();
  }

  /** Before the database pool closes: stop, and hand this replica's last counts to the others. */
  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.sync();
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
    this.syncing = this.syncing.then(() => this.exchange()).catch((err: Error) => this.logger.warn(`rate limit sync failed: ${err.message}`));
    return this.syncing;
  }

  private async exchange(): Promise<void> {
    if (!this.limit.enabled) return;
    const now = Date.now();
    const deltas = this.limit.drain(now);
    if (deltas.length > 0) {
      const values = deltas.map((_, i) => `($${i * 3 + 1}, $${i * 3 + 2}, $${i * 3 + 3})`).join(', ');
      await this.dataSource.query(
        `INSERT INTO rate_limit_counters (key_id, window_start, count) VALUES ${values}
         ON CONFLICT (key_id, window_start) DO UPDATE SET count = rate_limit_counters.count + EXCLUDED.count`,
        deltas.flatMap((d) => [d.key, String(d.windowStart), d.n]),
      );
    }
    const current = windowStart('minute', now);
    const rows: Array<{ key_id: string; count: number }> = await this.dataSource.query(
      'SELECT key_id, count FROM rate_limit_counters WHERE window_start = $1',
      [String(current)],
    );
    for (const row of rows) this.limit.observe(row.key_id, row.count, now);
    if (now - this.lastCleanup >= CLEANUP_EVERY_MS) {
      this.lastCleanup = now;
      await this.dataSource.query('DELETE FROM rate_limit_counters WHERE window_start < $1', [String(current - windowMs('minute'))]);
    }
  }
}
