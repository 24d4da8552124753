import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EnvironmentVariables } from '../config/env.schema';
import type { UsageCapDto } from '../keys/dto/chain-step.dto';
import { UsageCounter, UsagePeriod, usageKey, windowMs, windowStart } from './usage-window';

/**
 * Usage caps per key and chain step, checked in memory (no SQL per request). Every sync interval
 * each replica adds its increments to `usage_counters` and reads the totals of the current windows,
 * so with R replicas a cap can overshoot by at most what R-1 replicas serve in one interval.
 */
@Injectable()
export class UsageCaps implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(UsageCaps.name);
  private readonly counter = new UsageCounter();
  private timer: NodeJS.Timeout | null = null;
  private syncing: Promise<void> = Promise.resolve();

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly env: EnvironmentVariables,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.sync(), this.env.SVC_SYNC_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.sync();
  }

  /** Counts the request against the step's cap; false means the cap is reached and the step is skipped. */
  tryConsume(keyId: string, chainIndex: number, cap: UsageCapDto): boolean {
    return this.counter.tryConsume(usageKey(keyId, chainIndex), cap, Date.now());
  }

  sync(): Promise<void> {
    this.syncing = this.syncing.then(() => this.exchange()).catch((err: Error) => this.logger.warn(`usage cap sync failed: ${err.message}`));
    return this.syncing;
  }

  private async exchange(): Promise<void> {
    const now = Date.now();
    const deltas = this.counter.drainDeltas(now);
    if (deltas.length > 0) {
      const values = deltas.map((_, i) => `($${i * 4 + 1}, $${i * 4 + 2}, $${i * 4 + 3}, $${i * 4 + 4})`).join(', ');
      await this.dataSource.query(
        `INSERT INTO usage_counters (counter, per, window_start, count) VALUES ${values}
         ON CONFLICT (counter, per, window_start) DO UPDATE SET count = usage_counters.count + EXCLUDED.count`,
        deltas.flatMap((d) => [d.key, d.per, String(d.windowStart), d.n]),
      );
    }
    const rows: Array<{ counter: string; per: UsagePeriod; window_start: string; count: number }> = await this.dataSource.query(
      'SELECT counter, per, window_start, count FROM usage_counters WHERE window_start >= $1',
      [String(windowStart('minute', now) - windowMs('day'))],
    );
    for (const row of rows) {
      if (Number(row.window_start) === windowStart(row.per, now)) this.counter.observeTotal(row.counter, row.per, now, row.count);
    }
  }
}
