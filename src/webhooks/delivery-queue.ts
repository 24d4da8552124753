import type { EntityManager } from 'typeorm';
import type { JobQueue } from '../database/job-queue';

export const WEBHOOK_QUEUE = 'webhook-deliveries';

export interface DeliveryJob {
  deliveryId: string;
}

/**
 * `short`: at most one waiting job per delivery (singletonKey), so the sweep can re-send without
 * piling up. pg-boss retries only a handler that threw (database trouble, shutdown); an unsuccessful
 * HTTP attempt is not a throw: it is recorded, and the next attempt is a new job.
 */
export const WEBHOOK_QUEUE_OPTIONS = {
  policy: 'short' as const,
  retryLimit: 10,
  retryDelay: 5,
  retryBackoff: true,
  expireInSeconds: 120,
  retentionDays: 1,
};

/** Sends the job of a delivery; with `manager` it commits with that transaction; `startAfter` in seconds. */
export function enqueueDelivery(
  queue: JobQueue,
  deliveryId: string,
  startAfter = 0,
  manager?: EntityManager,
): Promise<string | null> {
  return queue.send<DeliveryJob>(
    WEBHOOK_QUEUE,
    { deliveryId },
    { singletonKey: deliveryId, ...(startAfter > 0 ? { startAfter } : {}) },
    manager,
  );
}
