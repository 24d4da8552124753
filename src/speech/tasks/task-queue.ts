import type { EntityManager } from 'typeorm';
import type { JobQueue } from '../../database/job-queue';

export const SPEECH_TASK_QUEUE = 'speech-tasks';

export interface SpeechTaskJob {
  taskId: string;
}

/** Claims a task may use (each pg-boss run that claims it, or a takeover after a crash); then it fails. */
export const MAX_ATTEMPTS = 4;

/**
 * `short`: at most one waiting job per task (singletonKey), so re-sends never pile up; a running or
 * dead-but-active job does not block a new one, and the claim decides who really runs.
 */
export const SPEECH_TASK_QUEUE_OPTIONS = {
  policy: 'short' as const,
  retryLimit: MAX_ATTEMPTS - 1,
  retryDelay: 5,
  retryBackoff: true,
  // the claim, not pg-boss's expiry, guards against double work: this only has to outlast a long task
  expireInSeconds: 4 * 3600,
  retentionDays: 1,
};

/** Sends the job of a task; with `manager` it is written in that transaction. */
export function enqueueTask(queue: JobQueue, taskId: string, manager?: EntityManager): Promise<string | null> {
  return queue.send<SpeechTaskJob>(SPEECH_TASK_QUEUE, { taskId }, { singletonKey: taskId }, manager);
}

/** The request id of one chunk's synthesis: its usage record names the task and the chunk. */
export const chunkRequestId = (taskId: string, idx: number): string => `req_${taskId}_${idx}`;
