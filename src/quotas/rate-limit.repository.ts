import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { CountsTable, SharedTotal } from './shared-counts';
import { windowMs, windowStart, type CountDelta } from './window-counter';

/** Old windows are deleted at most this often. */
const CLEANUP_EVERY_MS = 60_000;

/** `rate_limit_counters`: requests per key and UTC minute, summed over every replica. */
@Injectable()
export class RateLimitRepository implements CountsTable {
  private lastCleanup = 0;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async add(deltas: CountDelta[]): Promise<void> {
    const values = deltas.map((_, i) => `($${i * 3 + 1}, $${i * 3 + 2}, $${i * 3 + 3})`).join(', ');
    await this.dataSource.query(
      `INSERT INTO rate_limit_counters (key_id, window_start, count) VALUES ${values}
       ON CONFLICT (key_id, window_start) DO UPDATE SET count = rate_limit_counters.count + EXCLUDED.count`,
      deltas.flatMap((d) => [d.key, String(d.windowStart), d.n]),
    );
  }

  async totals(now: number): Promise<SharedTotal[]> {
    const current = windowStart('minute', now);
    const rows: Array<{ key_id: string; count: number }> = await this.dataSource.query(
      'SELECT key_id, count FROM rate_limit_counters WHERE window_start = $1',
      [String(current)],
    );
    return rows.map((r) => ({ key: r.key_id, per: 'minute', windowStart: current, count: r.count }));
  }

  /** Rows older than the previous minute, at most once a minute. */
  async prune(now: number): Promise<void> {
    if (now - this.lastCleanup < CLEANUP_EVERY_MS) return;
    this.lastCleanup = now;
    await this.dataSource.query('DELETE FROM rate_limit_counters WHERE window_start < $1', [
      String(windowStart('minute', now) - windowMs('minute')),
    ]);
  }
}
