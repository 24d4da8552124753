import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { JobQueue } from '../../database/job-queue';
import { SpeechTaskSweepsRepository } from './speech-task-sweeps.repository';
import { enqueueTask } from './task-queue';

/** Stalled tasks looked at per sweep. */
const SWEEP_BATCH = 100;

/**
 * The safety nets of async speech, on every replica: a task whose worker died (stale heartbeat) or
 * whose job was lost gets a new job, so it resumes from its stored chunks; expired files are removed.
 */
@Injectable()
export class SpeechTaskScheduler {
  private readonly logger = new Logger(SpeechTaskScheduler.name);
  private sweeping: Promise<number> | null = null;

  constructor(
    private readonly repository: SpeechTaskSweepsRepository,
    private readonly queue: JobQueue,
  ) {}

  /** Every 10 s: with the 30 s staleness, a task interrupted by a crash resumes within about 40 s of it. */
  @Interval('speech-task-resume', 10000)
  async resumeStalled(): Promise<number> {
    // overlapping runs would only send the same jobs twice
    this.sweeping ??= this.sweep().finally(() => (this.sweeping = null));
    return this.sweeping;
  }

  @Interval('speech-task-retention', 60000)
  async applyRetention(): Promise<number> {
    try {
      const expired = await this.repository.expireCompleted();
      await this.repository.purgeFailedChunks();
      if (expired > 0) this.logger.log(`${expired} speech task(s) expired; their audio was deleted`);
      return expired;
    } catch (err) {
      this.logger.warn(`speech task retention failed: ${(err as Error).message}`);
      return 0;
    }
  }

  private async sweep(): Promise<number> {
    try {
      const ids = await this.repository.stalled(SWEEP_BATCH);
      // singletonKey: while a job of the task is still waiting, the send is a no-op
      for (const id of ids) await enqueueTask(this.queue, id);
      if (ids.length > 0) this.logger.log(`re-sent the job of ${ids.length} stalled speech task(s)`);
      return ids.length;
    } catch (err) {
      this.logger.warn(`speech task sweep failed: ${(err as Error).message}`);
      return 0;
    }
  }
}
