import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { CountsTable, SharedTotal } from './shared-counts';
import { windowMs, windowStart, type CountDelta, type QuotaPeriod } from './window-counter';

/** `usage_counters`: requests per key chain step and window, summed over every replica. */
@Injectable()
export class StepQuotasRepository implements CountsTable {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async add(deltas: CountDelta[]): Promise<void> {
    const values = deltas.map((_, i) => `($${i * 4 + 1}, $${i * 4 + 2}, $${i * 4 + 3}, $${i * 4 + 4})`).join(', ');
    await this.dataSource.query(
      `INSERT INTO usage_counters (counter, per, window_start, count) VALUES ${values}
       ON CONFLICT (counter, per, window_start) DO UPDATE SET count = usage_counters.count + EXCLUDED.count`,
      deltas.flatMap((d) => [d.key, d.per, String(d.windowStart), d.n]),
    );
  }

  /** Every window of the last day (the longest period); the caller keeps the current one of each period. */
  async totals(now: number): Promise<SharedTotal[]> {
    const rows: Array<{ counter: string; per: QuotaPeriod; window_start: string; count: number }> =
      await this.dataSource.query(
        'SELECT counter, per, window_start, count FROM usage_counters WHERE window_start >= $1',
        [String(windowStart('minute', now) - windowMs('day'))],
      );
    return rows.map((r) => ({ key: r.counter, per: r.per, windowStart: Number(r.window_start), count: r.count }));
  }
}
