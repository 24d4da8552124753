import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { DeliveriesRepository } from './deliveries.repository';
import { WebhookDeliveryWorker } from './delivery.worker';

/** Events fanned out per transaction. */
const BATCH = 200;
/** Batches per tick when events keep coming; the rest waits for the next tick. */
const MAX_BATCHES = 10;

/**
 * Turns stored gateway events into deliveries, off the request path, on every replica: the state
 * row's lock lets one replica at a time do it, and each batch commits its deliveries and its
 * progress together, so no event is delivered twice or lost by a crash.
 */
@Injectable()
export class WebhookFanout implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(WebhookFanout.name);
  private running: Promise<number> | null = null;
  private stopped = false;

  constructor(
    private readonly repository: DeliveriesRepository,
    private readonly worker: WebhookDeliveryWorker,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.repository.ensureFanoutState();
  }

  /** Ticks that find the previous one still running skip rather than queue up. */
  @Interval('webhook-fanout', 500)
  async tick(): Promise<number> {
    if (this.stopped) return 0;
    this.running ??= this.run().finally(() => (this.running = null));
    return this.running;
  }

  /** Runs before the pool closes: no fan-out query may outlive it. */
  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private async run(): Promise<number> {
    let total = 0;
    try {
      for (let i = 0; i < MAX_BATCHES && !this.stopped; i++) {
        const done = await this.repository.fanOutBatch(BATCH);
        if (done === null) break;
        total += done;
        // this replica's lanes need not wait for their next poll
        if (done > 0) this.worker.wake();
        if (done < BATCH) break;
      }
    } catch (err) {
      this.logger.warn(`webhook fan-out failed: ${(err as Error).message}; retrying on the next tick`);
    }
    return total;
  }
}
