import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { EnvironmentVariables } from '../config/env.schema';
import { RETENTION_BATCH, RetentionSweep } from '../database/retention-sweep';
import { UsageRecordsRepository } from './usage-records.repository';

/** Deletes usage records older than `SVC_USAGE_RETENTION`, every minute, in small batches. */
@Injectable()
export class UsageRetention implements OnModuleDestroy {
  private readonly sweep: RetentionSweep;

  constructor(records: UsageRecordsRepository, env: EnvironmentVariables) {
    this.sweep = new RetentionSweep(
      'usage record',
      () => records.deleteExpired(env.SVC_USAGE_RETENTION, RETENTION_BATCH),
      new Logger(UsageRetention.name),
    );
  }

  async onModuleDestroy(): Promise<void> {
    await this.sweep.settled();
  }

  @Interval('usage-retention', 60000)
  async tick(): Promise<void> {
    await this.sweep.apply();
  }

  /** One sweep (overlapping calls share it): how many records it deleted. */
  apply(): Promise<number> {
    return this.sweep.apply();
  }
}
