import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { BatchOutcome } from '../database/bulk-insert';
import { NewUsageRecord, UsageRecordsRepository } from './usage-records.repository';

export type { NewUsageRecord } from './usage-records.repository';

const FLUSH_INTERVAL_MS = 100;
const FLUSH_SIZE = 500;
const MAX_BUFFERED = 50000;
/** At shutdown, a failing flush is retried for this long (the database may be restarting) before records are given up. */
const SHUTDOWN_FLUSH_MS = 5000;

/** Usage records leave the request path at once and reach the database in batches (one COPY or INSERT each: usage-records.repository.ts). */
@Injectable()
export class UsageWriter implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(UsageWriter.name);
  private buffer: NewUsageRecord[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  /** A flush is chained behind the one in flight and has not started: later calls share it. */
  private queued = false;
  /** The records at the head of the buffer that the write in flight is writing (they leave it when it ends). */
  private inFlight = 0;

  constructor(private readonly records: UsageRecordsRepository) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), FLUSH_INTERVAL_MS);
    this.timer.unref();
  }

  add(record: NewUsageRecord): void {
    if (this.buffer.length >= MAX_BUFFERED) {
      this.logger.error(`usage buffer full (${MAX_BUFFERED}): dropping the oldest record; is the database reachable?`);
      // the oldest not being written: the write in flight removes its own rows from the head when it ends
      this.buffer.splice(this.inFlight, 1);
    }
    this.buffer.push(record);
    // a full batch waiting, not counting the rows being written (they would ask for a small write after it)
    if (this.buffer.length - this.inFlight >= FLUSH_SIZE) void this.flush();
  }

  /**
   * Writes everything buffered so far (chained, so flushes never overlap). A flush still waiting for its turn
   * takes what is buffered when it starts, so a call made meanwhile shares it (every record added past a full
   * batch asked for one).
   */
  flush(): Promise<void> {
    if (this.queued) return this.flushing;
    this.queued = true;
    this.flushing = this.flushing.then(() => {
      this.queued = false;
      return this.writeBuffered();
    });
    return this.flushing;
  }

  /**
   * Writes the records buffered when it starts, FLUSH_SIZE at a time. Records added while a write is in
   * flight wait for the next tick (or a full batch): writing them at once made a loop of small INSERTs under
   * load (about 20 rows each, a commit every few milliseconds) instead of one batch per tick.
   */
  private async writeBuffered(): Promise<void> {
    let due = this.buffer.length;
    while (due > 0 && this.buffer.length > 0) {
      const batch = this.buffer.slice(0, Math.min(due, FLUSH_SIZE));
      this.inFlight = batch.length;
      let outcome: BatchOutcome;
      try {
        outcome = await this.records.insert(batch);
      } finally {
        this.inFlight = 0;
      }
      this.buffer.splice(0, outcome.processed);
      due -= outcome.processed;
      for (const { index, error } of outcome.refused) {
        // retrying a row the database refuses would hold every later record back
        this.logger.error(
          `usage record of ${batch[index].requestId} refused by the database and dropped: ${error.message}`,
        );
      }
      if (outcome.error) {
        // kept for the next flush: nothing is lost while the database is away
        this.logger.warn(`usage flush failed, ${this.buffer.length} record(s) kept: ${outcome.error.message}`);
        return;
      }
    }
  }

  /** Runs after the HTTP server and the streams have drained, before the pool closes. */
  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    const deadline = Date.now() + SHUTDOWN_FLUSH_MS;
    await this.flush();
    while (this.buffer.length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      await this.flush();
    }
    if (this.buffer.length > 0)
      this.logger.error(
        `${this.buffer.length} usage record(s) could not be written before exit: the database did not answer`,
      );
  }
}
