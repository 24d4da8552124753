import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { newId } from '../common/ids';
import { EnvironmentVariables } from '../config/env.schema';
import { JobQueue } from '../database/job-queue';
import { MetricsService } from '../metrics/metrics.service';
import { ClaimedDelivery, DeliveriesRepository } from './deliveries.repository';
import { endpointBackoffSeconds, TIMEOUTS_BEFORE_BACKOFF } from './endpoint-backoff';
import { parseRetrySchedule, waitAfterAttempt } from './retry-schedule';
import { SecretBox } from './secret-box';
import { AttemptResult, WebhookSender } from './webhook-sender';
import { DeliveryTrace } from './delivery-trace';
import { tracing } from '../tracing/tracing';

/** The delivery queue's name in metrics (`svc_queue_depth{queue="webhook-deliveries"}`). */
export const WEBHOOK_QUEUE = 'webhook-deliveries';
/** Deliveries one process sends at the same time (each waits at most the attempt timeout). */
export const LANES = 8;
/** Lanes one key may hold in a process: one key's backlog always leaves the others half of them. */
export const KEY_SHARE = LANES / 2;
/** Longer than any attempt (DNS, connect, 10 s timeout), so only a dead worker's lease expires. */
const LOCK_SECONDS = 60;
/** How often a process looks for due deliveries when nothing woke it (a new delivery here, a lane freed). */
const POLL_MS = 500;
/** At shutdown, sends in flight get this long to finish and be recorded before they are cut. */
const SHUTDOWN_GRACE_MS = 2000;

class ShuttingDown extends Error {
  constructor() {
    super('webhook worker is shutting down');
  }
}

/**
 * Sends delivery attempts: the deliveries table is the queue. One statement claims a batch of due
 * deliveries for the free lanes, in turns across keys (decisions §11); each is POSTed signed, then the
 * attempt, the delivery's new state and the endpoint's backoff are recorded in one transaction.
 */
@Injectable()
export class WebhookDeliveryWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(WebhookDeliveryWorker.name);
  private readonly schedule: number[];
  private readonly inFlight = new Map<string, { controller: AbortController; done: Promise<unknown> }>();
  /** Deliveries of each key in this process's lanes: the claim counts a key's turns on from these. */
  private readonly busy = new Map<string, number>();
  private stopping = false;
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  /** A wake-up that came while a poll ran: poll once more when it ends. */
  private again = false;

  constructor(
    queue: JobQueue,
    private readonly repository: DeliveriesRepository,
    private readonly sender: WebhookSender,
    private readonly secrets: SecretBox,
    private readonly metrics: MetricsService,
    env: EnvironmentVariables,
  ) {
    this.schedule = parseRetrySchedule(env.SVC_WEBHOOK_RETRY_SCHEDULE);
    queue.registerDepth(WEBHOOK_QUEUE, () => this.repository.pendingCount());
  }

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => this.wake(), POLL_MS);
    this.timer.unref();
    this.wake();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    await this.polling;
    const all = (): Promise<unknown> => Promise.allSettled([...this.inFlight.values()].map((f) => f.done));
    await Promise.race([all(), new Promise((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS).unref())]);
    for (const { controller } of this.inFlight.values()) controller.abort(new ShuttingDown());
    await all();
  }

  /** Looks for due deliveries now (fan-out stored some, a lane freed, the poll timer): one claim at a time. */
  wake(): void {
    if (this.stopping) return;
    if (this.polling) {
      this.again = true;
      return;
    }
    this.polling = this.poll().finally(() => {
      this.polling = null;
      if (this.again) {
        this.again = false;
        this.wake();
      }
    });
  }

  private async poll(): Promise<void> {
    const free = LANES - this.inFlight.size;
    if (free <= 0) return;
    let claimed: ClaimedDelivery[];
    const claim = newId('clm', 16);
    try {
      claimed = await this.repository.claimDue(free, claim, LOCK_SECONDS, this.busy, KEY_SHARE);
    } catch (err) {
      this.logger.warn(`webhook claim failed: ${(err as Error).message}; retrying on the next tick`);
      return;
    }
    // a full batch may leave more due: each lane that frees wakes the next claim
    for (const delivery of claimed) this.start(delivery, claim);
  }

  /** Runs one claimed delivery in a lane, tracked so shutdown waits for (or cuts) it. */
  private start(delivery: ClaimedDelivery, claim: string): void {
    const controller = new AbortController();
    this.busy.set(delivery.keyId, (this.busy.get(delivery.keyId) ?? 0) + 1);
    const done = this.run(delivery, claim, controller.signal)
      .catch((err: Error) => {
        if (!(err instanceof ShuttingDown)) this.logger.warn(`delivery ${delivery.id}: ${err.message}`);
      })
      .finally(() => {
        this.inFlight.delete(delivery.id);
        const left = (this.busy.get(delivery.keyId) ?? 1) - 1;
        if (left > 0) this.busy.set(delivery.keyId, left);
        else this.busy.delete(delivery.keyId);
        this.wake();
      });
    this.inFlight.set(delivery.id, { controller, done });
  }

  private async run(delivery: ClaimedDelivery, claim: string, signal: AbortSignal): Promise<void> {
    if (!delivery.enabled) {
      await this.repository.abandon(delivery.id, claim);
      return;
    }
    await this.attempt(delivery, claim, signal);
  }

  private async attempt(delivery: ClaimedDelivery, claim: string, signal: AbortSignal): Promise<void> {
    // tracing hook: the attempt's span, linked to the request that caused the event (decisions §12)
    const trace = tracing.on ? new DeliveryTrace(delivery, delivery.attempts + 1) : null;
    try {
      await this.deliver(delivery, claim, signal, trace);
    } catch (err) {
      trace?.failed(err instanceof ShuttingDown ? 'cancelled' : 'error');
      throw err;
    } finally {
      trace?.end();
    }
  }

  private async deliver(
    delivery: ClaimedDelivery,
    claim: string,
    signal: AbortSignal,
    trace: DeliveryTrace | null,
  ): Promise<void> {
    const result = await this.send(delivery, signal);
    if (signal.aborted) {
      // cut short by shutdown: not an attempt; another worker or the restarted service sends it
      await this.repository.release(delivery.id, claim);
      throw new ShuttingDown();
    }
    const attempt = delivery.attempts + 1;
    const wait = result.delivered ? null : waitAfterAttempt(this.schedule, attempt);
    const status = result.delivered ? 'succeeded' : wait === null ? 'failed' : 'pending';
    let timeouts = 0;
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
      async (manager) => {
        timeouts = await this.repository.noteEndpointOutcome(
          manager,
          delivery.endpointId,
          result.timedOut === true,
          endpointBackoffSeconds,
        );
      },
    );
    if (recorded) this.metrics.webhookAttempt(status);
    if (recorded) trace?.attempted(result, status);
    else trace?.failed('claim_lost');
    if (!recorded)
      this.logger.warn(
        `delivery ${delivery.id}: attempt ${attempt} was not recorded (its lock expired and another worker took it)`,
      );
    else if (status === 'failed')
      this.logger.warn(
        `delivery ${delivery.id} to endpoint ${delivery.endpointId} failed after ${attempt} attempt(s): ${result.error}`,
      );
    if (recorded && timeouts >= TIMEOUTS_BEFORE_BACKOFF)
      this.logger.warn(
        `endpoint ${delivery.endpointId} timed out ${timeouts} times in a row: its deliveries wait ${endpointBackoffSeconds(timeouts)} s`,
      );
  }

  private async send(delivery: ClaimedDelivery, signal: AbortSignal): Promise<AttemptResult> {
    let secret: string;
    try {
      secret = this.secrets.open(delivery.secret, delivery.endpointId);
    } catch (err) {
      return {
        delivered: false,
        statusCode: null,
        latencyMs: 0,
        error: (err as Error).message,
        snippet: null,
        errorType: 'secret_unreadable',
      };
    }
    return this.sender.send(delivery.url, delivery.event, secret, delivery.payload, signal);
  }
}
