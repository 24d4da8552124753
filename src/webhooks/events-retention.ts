import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { EnvironmentVariables } from '../config/env.schema';
import { RETENTION_BATCH, RetentionSweep } from '../database/retention-sweep';
import { DeliveriesRepository } from './deliveries.repository';

/**
 * Deletes failover and recovery events older than `SVC_EVENT_RETENTION`, every minute, in small batches;
 * an event the webhook fan-out has not passed yet is kept whatever its age.
 */
@Injectable()
export class EventsRetention implements OnModuleDestroy {
  private readonly sweep: RetentionSweep;

  constructor(deliveries: DeliveriesRepository, env: EnvironmentVariables) {
    this.sweep = new RetentionSweep(
      'event',
      () => deliveries.deleteExpiredEvents(env.SVC_EVENT_RETENTION, RETENTION_BATCH),
      new Logger(EventsRetention.name),
    );
  }

  async onModuleDestroy(): Promise<void> {
    await this.sweep.settled();
  }

  @Interval('events-retention', 60000)
  async tick(): Promise<void> {
    await this.sweep.apply();
  }

  /** One sweep (overlapping calls share it): how many events it deleted. */
  apply(): Promise<number> {
    return this.sweep.apply();
  }
}
