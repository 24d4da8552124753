import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { newId } from '../common/ids';
import { EnvironmentVariables } from '../config/env.schema';
import { JobQueue } from '../database/job-queue';
import { MetricsService } from '../metrics/metrics.service';
import { ClaimedDelivery, DeliveriesRepository } from './deliveries.repository';
import { DeliveryJob, enqueueDelivery, WEBHOOK_QUEUE, WEBHOOK_QUEUE_OPTIONS } from './delivery-queue';
import { parseRetrySchedule, waitAfterAttempt } from './retry-schedule';
import { SecretBox } from './secret-box';
import { AttemptResult, WebhookSender } from './webhook-sender';

/** Deliveries one process sends at the same time (each waits at most the 10 s timeout). */
const LANES = 4;
/** Longer than any attempt (DNS, connect, 10 s timeout), so only a dead worker's lock expires. */
const LOCK_SECONDS = 60;
/** A pending delivery this far past due, unlocked, has lost its job. */
const OVERDUE_SECONDS = 60;
/** At shutdown, sends in flight get this long to finish and be recorded before they are cut. */
const SHUTDOWN_GRACE_MS = 2000;

class ShuttingDown extends Error {
  constructor() {
    super('webhook worker is shutting down');
  }
}

/**
 * Sends delivery attempts from pg-boss jobs: claim the delivery, POST it signed, then record the
 * attempt, the delivery's new state and the next attempt's job in one transaction.
 */
@Injectable()
export class WebhookDeliveryWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(WebhookDeliveryWorker.name);
  private readonly schedule: number[];
  private readonly inFlight = new Map<string, { controller: AbortController; done: Promise<unknown> }>();
  private stopping = false;
  private queueReady = false;
  private sweeping: Promise<number> | null = null;

  constructor(
    private readonly queue: JobQueue,
    private readonly repository: DeliveriesRepository,
    private readonly sender: WebhookSender,
    private readonly secrets: SecretBox,
    private readonly metrics: MetricsService,
    env: EnvironmentVariables,
  ) {
    this.schedule = parseRetrySchedule(env.SVC_WEBHOOK_RETRY_SCHEDULE);
  }

  /** True once the queue exists: fan-out sends no job before. */
  get ready(): boolean {
    return this.queueReady;
  }

  /** After every module's init, so pg-boss has started. */
  async onApplicationBootstrap(): Promise<void> {
    await this.queue.createQueue(WEBHOOK_QUEUE, WEBHOOK_QUEUE_OPTIONS);
    this.queueReady = true;
    for (let lane = 0; lane < LANES; lane++) {
      await this.queue.work<DeliveryJob>(WEBHOOK_QUEUE, { pollingIntervalSeconds: 1 }, (job) =>
        this.deliver(job.data.deliveryId),
      );
    }
  }

  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    const all = (): Promise<unknown> => Promise.allSettled([...this.inFlight.values()].map((f) => f.done));
    await Promise.race([all(), new Promise((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS).unref())]);
    for (const { controller } of this.inFlight.values()) controller.abort(new ShuttingDown());
    await all();
    await this.sweeping;
  }

  /** One job: one attempt. Throwing hands the job back to pg-boss for a later retry. */
  async deliver(deliveryId: string): Promise<void> {
    if (this.stopping) throw new ShuttingDown();
    // tracked from the claim on, so shutdown waits for (or cuts) every attempt it could interrupt
    const controller = new AbortController();
    const key = newId('run', 12);
    const done = this.claimAndAttempt(deliveryId, controller.signal);
    this.inFlight.set(key, { controller, done });
    try {
      await done;
    } finally {
      this.inFlight.delete(key);
    }
  }

  private async claimAndAttempt(deliveryId: string, signal: AbortSignal): Promise<void> {
    const claim = newId('clm', 16);
    const outcome = await this.repository.claim(deliveryId, claim, LOCK_SECONDS);
    if (outcome.kind === 'early') {
      await enqueueDelivery(this.queue, deliveryId, outcome.dueInSeconds);
      return;
    }
    if (outcome.kind === 'nothing') return;
    if (!outcome.delivery.enabled) {
      await this.repository.abandon(outcome.delivery.id, claim);
      return;
    }
    await this.attempt(outcome.delivery, claim, signal);
  }

  private async attempt(delivery: ClaimedDelivery, claim: string, signal: AbortSignal): Promise<void> {
    const result = await this.send(delivery, signal);
    if (signal.aborted) {
      // cut short by shutdown: not an attempt; another worker or the restarted service sends it
      await this.repository.release(delivery.id, claim);
      throw new ShuttingDown();
    }
    const attempt = delivery.attempts + 1;
    const wait = result.delivered ? null : waitAfterAttempt(this.schedule, attempt);
    const status = result.delivered ? 'succeeded' : wait === null ? 'failed' : 'pending';
    const recorded = await this.repository.recordAttempt(
      {
        deliveryId: delivery.id,
        endpointId: delivery.endpointId,
        eventId: delivery.eventId,
        event: delivery.event,
        attempt,
        statusCode: result.statusCode,
        latencyMs: result.latencyMs,
        error: result.error,
        responseSnippet: result.snippet,
      },
      claim,
      status,
      wait,
      (manager) => enqueueDelivery(this.queue, delivery.id, wait ?? 0, manager),
    );
    if (recorded) this.metrics.webhookAttempt(status);
    if (!recorded)
      this.logger.warn(
        `delivery ${delivery.id}: attempt ${attempt} was not recorded (its lock expired and another worker took it)`,
      );
    else if (status === 'failed')
      this.logger.warn(
        `delivery ${delivery.id} to endpoint ${delivery.endpointId} failed after ${attempt} attempt(s): ${result.error}`,
      );
  }

  private async send(delivery: ClaimedDelivery, signal: AbortSignal): Promise<AttemptResult> {
    let secret: string;
    try {
      secret = this.secrets.open(delivery.secret, delivery.endpointId);
    } catch (err) {
      return { delivered: false, statusCode: null, latencyMs: 0, error: (err as Error).message, snippet: null };
    }
    return this.sender.send(delivery.url, delivery.event, secret, delivery.payload, signal);
  }

  /** Safety net: a pending delivery whose job was lost (failed past its retries, queue purged) gets a new one. */
  @Interval('webhook-sweep', 30000)
  async sweep(): Promise<number> {
    if (this.stopping) return 0;
    this.sweeping ??= this.resendStalled().finally(() => (this.sweeping = null));
    return this.sweeping;
  }

  private async resendStalled(): Promise<number> {
    try {
      const ids = await this.repository.stalled(100, OVERDUE_SECONDS);
      for (const id of ids) await enqueueDelivery(this.queue, id);
      if (ids.length > 0) this.logger.log(`re-sent the job of ${ids.length} stalled webhook deliveries`);
      return ids.length;
    } catch (err) {
      this.logger.warn(`webhook sweep failed: ${(err as Error).message}`);
      return 0;
    }
  }
}
