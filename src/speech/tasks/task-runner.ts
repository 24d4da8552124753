import { Injectable, Logger } from '@nestjs/common';
import { KeyDirectory } from '../../keys/key-directory';
import type { SpeechJob } from '../speech-job';
import { SpeechService } from '../speech.service';
import type { TaskAudio } from './speech-task.entity';
import { ClaimedTask, SpeechTasksRepository } from './speech-tasks.repository';
import { TaskAssembler } from './task-assembler';
import { ChunkSpeaker, type TaskRun } from './chunk-speaker';
import { throwIfAborted } from './task-interruptions';
import { TaskVoice } from './task-voice';

/** Chunks of one task synthesised at the same time (an upstream's latency overlaps; the offline engine runs one at a time anyway). */
const CHUNK_CONCURRENCY = 2;

/**
 * Runs a claimed task: synthesises every chunk not stored yet through the failover core (the key's chain as it is
 * now, one scope and usage record per chunk, every chunk with the task's one voice: ChunkSpeaker), stores each,
 * then assembles.
 */
@Injectable()
export class TaskRunner {
  private readonly logger = new Logger(TaskRunner.name);

  constructor(
    private readonly repository: SpeechTasksRepository,
    private readonly speech: SpeechService,
    private readonly speaker: ChunkSpeaker,
    private readonly keys: KeyDirectory,
    private readonly assembler: TaskAssembler,
  ) {}

  async run(task: ClaimedTask, workerId: string, signal: AbortSignal): Promise<TaskAudio> {
    const stored = await this.repository.storedChunks(task.id);
    const pending = task.plan.map((_, idx) => idx).filter((idx) => !stored.has(idx));
    if (stored.size > 0)
      this.logger.log(
        `task ${task.id} resumes (attempt ${task.attempts}): ${stored.size} of ${task.plan.length} chunks already stored`,
      );
    if (pending.length > 0) await this.synthesizeAll(task, workerId, pending, signal);
    throwIfAborted(signal);
    return this.assembler.assemble(task, workerId, signal);
  }

  /** The first chunk alone while the task has no voice yet (it picks the voice), then lanes take the next chunk in order; the first failure stops the others. */
  private async synthesizeAll(
    task: ClaimedTask,
    workerId: string,
    pending: number[],
    signal: AbortSignal,
  ): Promise<void> {
    const key = this.keys.byId(task.keyId);
    // not known here yet (made on another replica a moment ago) or being deleted: try again later
    if (!key) throw new Error(`the key of task ${task.id} is not known to this replica`);
    const stop = new AbortController();
    const relay = (): void => stop.abort(signal.reason);
    signal.addEventListener('abort', relay, { once: true });
    const job: SpeechJob = { ...task.job, output: { ...task.job.output, format: 'pcm' } };
    const run: TaskRun = {
      task,
      workerId,
      key,
      job,
      // the voices once per run (each chunk confirms them): the same 400s as at submission
      plan: await this.speech.plan(key, job),
      voice: new TaskVoice(task.voicePin, pending),
      signal: stop.signal,
      announced: new Set<string>(),
    };
    const failures: unknown[] = [];
    const speak = async (idx: number): Promise<void> => {
      try {
        await this.speaker.speak(run, idx);
      } catch (err) {
        failures.push(err);
        stop.abort(err);
      }
    };
    const lane = async (): Promise<void> => {
      for (let idx = run.voice.take(); idx !== undefined && !stop.signal.aborted; idx = run.voice.take()) {
        await speak(idx);
        await run.voice.clear(stop.signal);
      }
    };
    try {
      const first = run.voice.pin ? undefined : run.voice.take();
      if (first !== undefined) await speak(first);
      await Promise.all(Array.from({ length: CHUNK_CONCURRENCY }, lane));
    } finally {
      signal.removeEventListener('abort', relay);
    }
    // the task's own interruption (lost, shutting down) wins over the errors it caused in the lanes
    throwIfAborted(signal);
    if (failures.length > 0) throw failures[0] instanceof Error ? failures[0] : new Error(String(failures[0]));
  }
}
