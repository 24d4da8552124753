import type { Logger } from '@nestjs/common';

/** Rows deleted per statement: short transactions, however far behind a sweep is. */
export const RETENTION_BATCH = 5000;
/** Statements per sweep; the rest waits for the next one. */
const MAX_BATCHES = 20;

/**
 * Deletes rows past their retention in batches of RETENTION_BATCH (`deleteBatch` deletes one and says how many
 * went), at most MAX_BATCHES per sweep; overlapping calls share one sweep. Every replica runs it; they delete
 * the same rows at worst. A failure is logged and retried by the next sweep.
 */
export class RetentionSweep {
  private running: Promise<number> | null = null;

  constructor(
    private readonly what: string,
    private readonly deleteBatch: () => Promise<number>,
    private readonly logger: Logger,
  ) {}

  /** One sweep: how many rows it deleted. */
  apply(): Promise<number> {
    this.running ??= this.run().finally(() => (this.running = null));
    return this.running;
  }

  /** Resolves when no sweep runs (before the pool closes: no statement may outlive it). */
  async settled(): Promise<void> {
    await this.running;
  }

  private async run(): Promise<number> {
    let total = 0;
    try {
      for (let i = 0; i < MAX_BATCHES; i++) {
        const deleted = await this.deleteBatch();
        total += deleted;
        if (deleted < RETENTION_BATCH) break;
      }
      if (total > 0) this.logger.log(`retention deleted ${total} ${this.what}(s)`);
    } catch (err) {
      this.logger.warn(`retention of ${this.what}s failed: ${(err as Error).message}; retrying in a minute`);
    }
    return total;
  }
}
