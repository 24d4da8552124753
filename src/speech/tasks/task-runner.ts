import { Injectable, Logger } from '@nestjs/common';
import { EnvironmentVariables } from '../../config/env.schema';
import { DomainError } from '../../common/errors/domain-error';
import { openCall, type ProxiedCall } from '../../failover/proxied-call';
import { FailoverService } from '../../failover/failover.service';
import { KeyDirectory } from '../../keys/key-directory';
import type { SpeechJob } from '../speech-job';
import { SpeechService } from '../speech.service';
import type { TaskAudio } from './speech-task.entity';
import { ClaimedTask, SpeechTasksRepository } from './speech-tasks.repository';
import { TaskAssembler } from './task-assembler';
import { TaskLost, throwIfAborted } from './task-interruptions';
import { synthesisProgress } from './task-progress';
import { chunkRequestId } from './task-queue';
import { tracing } from '../../tracing/tracing';

/** Chunks of one task synthesised at the same time (an upstream's latency overlaps; the offline engine runs one at a time anyway). */
const CHUNK_CONCURRENCY = 2;

/**
 * Runs a claimed task: synthesises every chunk not stored yet through the failover core (the
 * key's chain as it is now, one scope and usage record per chunk), stores each, then assembles.
 */
@Injectable()
export class TaskRunner {
  private readonly logger = new Logger(TaskRunner.name);

  constructor(
    private readonly repository: SpeechTasksRepository,
    private readonly speech: SpeechService,
    private readonly failover: FailoverService,
    private readonly keys: KeyDirectory,
    private readonly assembler: TaskAssembler,
    private readonly env: EnvironmentVariables,
  ) {}

  async run(task: ClaimedTask, workerId: string, signal: AbortSignal): Promise<TaskAudio> {
    const stored = await this.repository.storedChunks(task.id);
    const pending = task.plan.map((_, idx) => idx).filter((idx) => !stored.has(idx));
    if (stored.size > 0)
      this.logger.log(
        `task ${task.id} resumes (attempt ${task.attempts}): ${stored.size} of ${task.plan.length} chunks already stored`,
      );
    await this.synthesizeAll(task, workerId, pending, signal);
    throwIfAborted(signal);
    return this.assembler.assemble(task, workerId, signal);
  }

  /** Lanes take the next chunk in order; the first failure stops the others. */
  private async synthesizeAll(
    task: ClaimedTask,
    workerId: string,
    pending: number[],
    signal: AbortSignal,
  ): Promise<void> {
    const stop = new AbortController();
    const relay = (): void => stop.abort(signal.reason);
    signal.addEventListener('abort', relay, { once: true });
    let next = 0;
    const failures: unknown[] = [];
    // the task is one request to its client: one failover event per fallback provider, not one per chunk
    const announced = new Set<string>();
    const lane = async (): Promise<void> => {
      while (!stop.signal.aborted && next < pending.length) {
        const idx = pending[next++];
        try {
          await this.synthesizeChunk(task, workerId, idx, stop.signal, announced);
        } catch (err) {
          failures.push(err);
          stop.abort(err);
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(CHUNK_CONCURRENCY, pending.length) }, lane));
    } finally {
      signal.removeEventListener('abort', relay);
    }
    // the task's own interruption (lost, shutting down) wins over the errors it caused in the lanes
    throwIfAborted(signal);
    if (failures.length > 0) throw failures[0] instanceof Error ? failures[0] : new Error(String(failures[0]));
  }

  private async synthesizeChunk(
    task: ClaimedTask,
    workerId: string,
    idx: number,
    signal: AbortSignal,
    announced: Set<string>,
  ): Promise<void> {
    const key = this.keys.byId(task.keyId);
    // not known here yet (made on another replica a moment ago) or being deleted: try again later
    if (!key) throw new Error(`the key of task ${task.id} is not known to this replica`);
    const chunk = task.plan[idx];
    // tracing hook: each chunk's SERVER span, linked to the request that created the task
    const origin = tracing.on ? tracing.linkedOrigin('speech_task chunk', task.traceparent ?? null) : null;
    const call = openCall(this.failover, chunkRequestId(task.id, idx), key, 'speech', signal, origin);
    call.scope.failoversAnnounced = announced;
    const job: SpeechJob = { ...task.job, text: chunk.text, output: { ...task.job.output, format: 'pcm' } };
    const pcm = await this.collect(call, job, idx, signal);
    const served = call.scope.served;
    if (!served) throw new Error(`chunk ${idx} of task ${task.id} has audio but no serving step`);
    const stored = await this.repository.storeChunk(task.id, workerId, {
      idx,
      pcm,
      provider: served.provider,
      level: served.level,
      chars: synthesisProgress(chunk.chars, task.job.output.format),
    });
    // nothing stored: another worker took the task over, or already stored this chunk while we did too
    if (!stored && !(await this.repository.isOwner(task.id, workerId))) throw new TaskLost(task.id);
  }

  /** The chunk's raw s16le, whole frames only; an upstream that breaks off mid-chunk fails the chunk (it is redone). */
  private async collect(call: ProxiedCall, job: SpeechJob, idx: number, signal: AbortSignal): Promise<Buffer> {
    const parts: Buffer[] = [];
    // set by the sink when the provider breaks off after its first audio
    const failure: { error: DomainError | null } = { error: null };
    // no chunk alone may go past the task's cap; the whole is checked again when the chunks are joined
    await this.speech.synthesize(
      call,
      job,
      {
        write: (bytes) => void parts.push(bytes),
        // the gateway's own verdict (audio_too_long) fails the task as it is, not as a provider failure
        broke: (reason, _status, err) => {
          failure.error =
            err instanceof DomainError
              ? err
              : new DomainError(
                  'all_providers_failed',
                  `${call.scope.served?.provider ?? 'the provider'} broke off chunk ${idx} (${reason}).`,
                );
        },
      },
      { maxSeconds: this.env.SVC_MAX_TASK_AUDIO_SECONDS },
    );
    // an aborted synthesis ends early without an error: never store it as the chunk
    throwIfAborted(signal);
    if (failure.error) throw failure.error;
    const pcm = Buffer.concat(parts);
    const frameBytes = 2 * job.output.channels;
    return pcm.length % frameBytes === 0 ? pcm : pcm.subarray(0, pcm.length - (pcm.length % frameBytes));
  }
}
