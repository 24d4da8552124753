import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EnvironmentVariables } from '../config/env.schema';
import { maintenanceQuery } from '../database/maintenance-query';
import { pgPoolOf } from '../database/pg-pool';

/** Rows deleted per statement: short transactions, however far behind the job is. */
const BATCH = 5000;
/** Statements per run (per table); the rest waits a minute. */
const MAX_BATCHES = 20;

/**
 * Deletes usage records older than `SVC_USAGE_RETENTION` and failover/recovery events older than
 * `SVC_EVENT_RETENTION`, every minute, in small batches. An event the webhook fan-out has not passed
 * yet is kept whatever its age. Every replica runs it; they delete the same rows at worst.
 */
@Injectable()
export class RecordsRetention implements OnModuleDestroy {
  private readonly logger = new Logger(RecordsRetention.name);
  private running: Promise<{ usage: number; events: number }> | null = null;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly env: EnvironmentVariables,
  ) {}

  /** Runs before the pool closes: no retention statement may outlive it. */
  async onModuleDestroy(): Promise<void> {
    await this.running;
  }

  @Interval('records-retention', 60000)
  async tick(): Promise<void> {
    await this.apply();
  }

  /** One run (overlapping calls share it): how many rows of each kind were deleted. */
  apply(): Promise<{ usage: number; events: number }> {
    this.running ??= this.run().finally(() => (this.running = null));
    return this.running;
  }

  private async run(): Promise<{ usage: number; events: number }> {
    const deleted = { usage: 0, events: 0 };
    try {
      deleted.usage = await this.inBatches(
        // ids grow with time: the oldest rows come first, and a run with nothing to delete reads one index entry
        `DELETE FROM usage_records WHERE id IN (
           SELECT id FROM (SELECT id, created_at FROM usage_records ORDER BY id LIMIT ${BATCH}) oldest
            WHERE created_at < now() - make_interval(secs => $1))`,
        this.env.SVC_USAGE_RETENTION,
      );
      deleted.events = await this.inBatches(
        `DELETE FROM gateway_events WHERE id IN (
           SELECT e.id FROM gateway_events e, webhook_fanout_state s
            WHERE s.id = 1 AND e.created_at < now() - make_interval(secs => $1) AND (e.txid, e.id) <= (s.cursor_txid, s.cursor_id)
            LIMIT ${BATCH})`,
        this.env.SVC_EVENT_RETENTION,
      );
      if (deleted.usage + deleted.events > 0) {
        this.logger.log(`retention deleted ${deleted.usage} usage record(s) and ${deleted.events} event(s)`);
      }
    } catch (err) {
      this.logger.warn(`records retention failed: ${(err as Error).message}; retrying in a minute`);
    }
    return deleted;
  }

  private async inBatches(sql: string, retentionSeconds: number): Promise<number> {
    let total = 0;
    for (let i = 0; i < MAX_BATCHES; i++) {
      // its own, longer deadline: a batch may take a while after a long outage, and no request waits for it
      const { rowCount } = await maintenanceQuery(pgPoolOf(this.dataSource), sql, [retentionSeconds]);
      total += rowCount ?? 0;
      if ((rowCount ?? 0) < BATCH) break;
    }
    return total;
  }
}
