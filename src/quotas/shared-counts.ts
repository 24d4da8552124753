import { Logger } from '@nestjs/common';
import type { CountDelta, QuotaPeriod, WindowCounter } from './window-counter';

/** A total of every replica for one counter and window, as the shared table holds it. */
export interface SharedTotal {
  key: string;
  per: QuotaPeriod;
  windowStart: number;
  count: number;
}

/** Where replicas pool their counts: one table, its SQL in a repository. */
export interface CountsTable {
  /** Adds each replica's increments to the shared totals. */
  add(deltas: CountDelta[]): Promise<void>;
  /** The totals of the windows current at `now` (older rows may come too: they are ignored). */
  totals(now: number): Promise<SharedTotal[]>;
  /** Deletes windows that can no longer matter (called after each exchange). */
  prune?(now: number): Promise<void>;
}

/**
 * "Count in memory, exchange deltas with PostgreSQL": a check costs no SQL; every interval this replica
 * adds its increments to the shared table and raises its counts to the totals of every replica. With R
 * replicas a limit can overshoot by at most what R-1 replicas admit in one interval. Used by the per-key
 * rate limit and the chain steps' quotas.
 */
export class SharedCounts {
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | null = null;
  private syncing: Promise<void> = Promise.resolve();

  constructor(
    readonly counter: WindowCounter,
    private readonly table: CountsTable,
    private readonly name: string,
  ) {
    this.logger = new Logger(name);
  }

  /** Exchanges every `intervalMs` until `stop`. */
  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.sync(), intervalMs);
    this.timer.unref();
  }

  /** Stops, and hands this replica's last counts to the others. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sync();
  }

  /** One exchange, after any still running; a failure is logged and the counts are kept for the next. */
  sync(): Promise<void> {
    this.syncing = this.syncing
      .then(() => this.exchange())
      .catch((err: Error) => this.logger.warn(`${this.name} sync failed: ${err.message}`));
    return this.syncing;
  }

  private async exchange(): Promise<void> {
    const now = Date.now();
    const deltas = this.counter.drainDeltas(now);
    if (deltas.length > 0) {
      try {
        await this.table.add(deltas);
      } catch (err) {
        // kept for the next exchange: a database that is away for a while loses no count
        this.counter.undrain(deltas);
        throw err;
      }
    }
    for (const total of await this.table.totals(now))
      this.counter.observeTotal(total.key, total.per, now, total.count, total.windowStart);
    await this.table.prune?.(now);
  }
}
