import type { EntityManager } from 'typeorm';
import type { JobQueue } from '../../database/job-queue';

export const SPEECH_TASK_QUEUE = 'speech-tasks';

export interface SpeechTaskJob {
  taskId: string;
}

/** Claims a task may use (each pg-boss run that claims it, or a takeover after a crash); then it fails. */
export const MAX_ATTEMPTS = 4;

/** The wait before a task that failed is run again: 5 s after its first attempt, doubling after each. */
export const RETRY_DELAY_SECONDS = 5;
export const retryDelaySeconds = (attempts: number): number => RETRY_DELAY_SECONDS * 2 ** Math.max(0, attempts - 1);

/**
 * `short`: at most one waiting job per task (singletonKey), so re-sends never pile up; a running or
 * dead-but-active job does not block a new one. A job only wakes a worker: the fair claim decides
 * which task it runs (each ready task has a job; the stalled-task sweep re-sends one for a task left without).
 */
export const SPEECH_TASK_QUEUE_OPTIONS = {
  policy: 'short' as const,
  retryLimit: MAX_ATTEMPTS - 1,
  retryDelay: RETRY_DELAY_SECONDS,
  retryBackoff: true,
  // the claim, not pg-boss's expiry, guards against double work: this only has to outlast a long task
  expireInSeconds: 4 * 3600,
  retentionDays: 1,
};

/** Sends the job of a task; with `manager` it is written in that transaction. */
export function enqueueTask(queue: JobQueue, taskId: string, manager?: EntityManager): Promise<string | null> {
  return queue.send<SpeechTaskJob>(SPEECH_TASK_QUEUE, { taskId }, { singletonKey: taskId }, manager);
}

/**
 * The job of a failed task's next attempt, due when its delay is over. A key of its own (per attempt): a
 * waiting job of the task may already have been spent on another task by then, and this one must not be dropped.
 */
export function enqueueRetry(
  queue: JobQueue,
  taskId: string,
  attempts: number,
  manager: EntityManager,
): Promise<string | null> {
  return queue.send<SpeechTaskJob>(
    SPEECH_TASK_QUEUE,
    { taskId },
    { singletonKey: `${taskId}#${attempts}`, startAfter: retryDelaySeconds(attempts) },
    manager,
  );
}

/** The request id of one chunk's synthesis: its usage record names the task and the chunk. */
export const chunkRequestId = (taskId: string, idx: number): string => `req_${taskId}_${idx}`;
