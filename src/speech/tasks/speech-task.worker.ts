import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { toDomainError } from '../../common/errors/domain-error';
import { newId } from '../../common/ids';
import { JobQueue } from '../../database/job-queue';
import { MetricsService } from '../../metrics/metrics.service';
import type { TaskError } from './speech-task.entity';
import { ClaimedTask, SpeechTasksRepository } from './speech-tasks.repository';
import { ShuttingDown, TaskLost } from './task-interruptions';
import {
  enqueueRetry,
  enqueueTask,
  MAX_ATTEMPTS,
  retryDelaySeconds,
  SPEECH_TASK_QUEUE,
  SPEECH_TASK_QUEUE_OPTIONS,
  SpeechTaskJob,
} from './task-queue';
import { TaskRunner } from './task-runner';

/** Tasks one process runs at the same time. */
const TASK_CONCURRENCY = 2;
/** Well under STALE_SECONDS, so a live worker is never taken for dead. */
const HEARTBEAT_MS = 5000;

/**
 * The pg-boss side of async speech: a job wakes a worker, which claims the next task fairly across
 * keys (compare-and-set, so a job with nothing left to claim does nothing), keeps its heartbeat, and
 * decides what a failure means: the client's fault fails the task at once, anything else goes back
 * to the queue until the attempts run out.
 */
@Injectable()
export class SpeechTaskWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(SpeechTaskWorker.name);
  /** Unique per process: a restarted service is a new worker and takes over only stale tasks. */
  readonly workerId = newId('wrk', 16);
  private readonly running = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private stopping = false;

  constructor(
    private readonly queue: JobQueue,
    private readonly repository: SpeechTasksRepository,
    private readonly runner: TaskRunner,
    private readonly metrics: MetricsService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.queue.createQueue(SPEECH_TASK_QUEUE, SPEECH_TASK_QUEUE_OPTIONS);
    for (let lane = 0; lane < TASK_CONCURRENCY; lane++) {
      await this.queue.work<SpeechTaskJob>(SPEECH_TASK_QUEUE, { pollingIntervalSeconds: 1 }, () => this.handle());
    }
  }

  /** Before the job queue and the pool close: running tasks go back to the queue, their chunks kept. */
  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    for (const { controller } of this.running.values()) controller.abort(new ShuttingDown());
    await Promise.all([...this.running.values()].map((r) => r.done));
  }

  /** One pg-boss job: runs the task the fair claim picks (not necessarily the job's); throwing makes pg-boss retry the job later. */
  async handle(): Promise<void> {
    // a job fetched while stopping stays with pg-boss (failed now, retried later) instead of being claimed
    if (this.stopping) throw new ShuttingDown();
    const task = await this.repository.claimNext(this.workerId);
    if (!task) return;
    const taskId = task.id;
    if (task.attempts > MAX_ATTEMPTS) {
      const error = task.error ?? {
        code: 'internal_error',
        message: `The task was interrupted ${MAX_ATTEMPTS} times.`,
      };
      this.logger.warn(`task ${taskId} gave up after ${MAX_ATTEMPTS} attempts: ${error.message}`);
      await this.repository.fail(taskId, this.workerId, error);
      return;
    }
    const controller = new AbortController();
    const done = this.execute(task, controller);
    this.running.set(taskId, { controller, done: done.catch(() => undefined) });
    try {
      await done;
    } finally {
      this.running.delete(taskId);
    }
  }

  private async execute(task: ClaimedTask, controller: AbortController): Promise<void> {
    const started = Date.now();
    const beat = setInterval(() => void this.beat(task.id, controller), HEARTBEAT_MS);
    try {
      const audio = await this.runner.run(task, this.workerId, controller.signal);
      this.logger.log(
        `task ${task.id} completed in ${Date.now() - started} ms: ${task.plan.length} chunks, ${audio.duration_ms} ms of ${audio.format}`,
      );
      this.metrics.taskRun('completed', Date.now() - started);
    } catch (err) {
      this.metrics.taskRun(controller.signal.aborted ? 'interrupted' : 'failed', Date.now() - started);
      await this.settle(task, controller.signal.aborted ? controller.signal.reason : err, err);
    } finally {
      clearInterval(beat);
    }
  }

  private async beat(taskId: string, controller: AbortController): Promise<void> {
    try {
      if (!(await this.repository.heartbeat(taskId, this.workerId))) controller.abort(new TaskLost(taskId));
    } catch (err) {
      // a missed beat is harmless unless it lasts: then another worker takes over and our writes are refused
      this.logger.warn(`heartbeat of task ${taskId} failed: ${(err as Error).message}`);
    }
  }

  private async settle(task: ClaimedTask, reason: unknown, err: unknown): Promise<void> {
    if (reason instanceof TaskLost) {
      this.logger.warn(reason.message);
      return;
    }
    if (reason instanceof ShuttingDown) {
      const released = await this.repository.release(task.id, this.workerId, null, true, (manager) =>
        enqueueTask(this.queue, task.id, manager),
      );
      this.logger.log(`task ${task.id} ${released ? 'returned to the queue' : 'was no longer ours'} at shutdown`);
      return;
    }
    const domain = toDomainError(err);
    if (!domain) this.logger.error({ err }, `task ${task.id} hit an unexpected error`);
    const error: TaskError = domain
      ? { code: domain.code, message: domain.message }
      : { code: 'internal_error', message: 'The task failed with an internal error.' };
    // the client's own fault (rejected text, unknown voice) will not improve on retry, nor a voice the request would not
    // trade after its pin wait (a retry would only fail again); model_not_supported may be this replica's providers
    // file lacking a provider the others have (a rolling deploy), so it is retried like an outage
    if (
      domain &&
      ((domain.status < 500 && domain.code !== 'model_not_supported') || domain.code === 'voice_unavailable')
    ) {
      await this.repository.fail(task.id, this.workerId, error);
      this.logger.warn(`task ${task.id} failed: ${error.code}: ${error.message}`);
      return;
    }
    if (task.attempts >= MAX_ATTEMPTS) {
      await this.repository.fail(task.id, this.workerId, error);
      this.logger.warn(`task ${task.id} failed after ${task.attempts} attempts: ${error.message}`);
      return;
    }
    const delay = retryDelaySeconds(task.attempts);
    this.logger.warn(
      `task ${task.id} attempt ${task.attempts} failed (${error.code}: ${error.message}); it will be retried in ${delay} s`,
    );
    // its own job for the retry: the job that ran it woke a worker for whichever task was next, and is done
    await this.repository.release(
      task.id,
      this.workerId,
      error,
      false,
      (manager) => enqueueRetry(this.queue, task.id, task.attempts, manager),
      delay,
    );
  }
}
