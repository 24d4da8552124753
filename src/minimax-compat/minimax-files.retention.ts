import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { MiniMaxFilesRepository } from './minimax-files.repository';

/** Batches per run; the rest waits a minute. */
const MAX_BATCHES = 20;

/**
 * Deletes expired files of the MiniMax-native surface (T2A links after 24 h, uploads after 24 h) every
 * minute: an expired link is never served, and its audio does not outlive it by more than the sweep.
 */
@Injectable()
export class MiniMaxFilesRetention implements OnModuleDestroy {
  private readonly logger = new Logger(MiniMaxFilesRetention.name);
  private running: Promise<number> | null = null;

  constructor(private readonly repository: MiniMaxFilesRepository) {}

  /** No statement outlives the pool. */
  async onModuleDestroy(): Promise<void> {
    await this.running;
  }

  @Interval('minimax-files-retention', 60000)
  async tick(): Promise<void> {
    await this.apply();
  }

  /** One run (overlapping calls share it): how many files were deleted. */
  apply(): Promise<number> {
    this.running ??= this.run().finally(() => (this.running = null));
    return this.running;
  }

  private async run(): Promise<number> {
    let total = 0;
    try {
      for (let i = 0; i < MAX_BATCHES; i++) {
        const { deleted, more } = await this.repository.deleteExpiredBatch();
        total += deleted;
        if (!more) break;
      }
    } catch (err) {
      this.logger.warn(`MiniMax files retention failed: ${(err as Error).message}; retrying in a minute`);
    }
    return total;
  }
}
