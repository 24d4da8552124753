import { Injectable, Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { DomainError } from '../../common/errors/domain-error';
import { EnvironmentVariables } from '../../config/env.schema';
import type { PlannedStep } from '../../failover/chain';
import { FailoverService } from '../../failover/failover.service';
import { openCall, type ProxiedCall, withCall } from '../../failover/proxied-call';
import type { AuthenticatedKey } from '../../keys/key-directory';
import type { VoicePlan } from '../../voices/voice-plan';
import type { SpeechJob } from '../speech-job';
import { SpeechService } from '../speech.service';
import { ClaimedTask, SpeechTasksRepository } from './speech-tasks.repository';
import { TaskLost, throwIfAborted } from './task-interruptions';
import { TaskPinsRepository } from './task-pins.repository';
import { synthesisProgress } from './task-progress';
import { chunkRequestId } from './task-queue';
import { tracing } from '../../tracing/tracing';
import type { TaskVoice } from './task-voice';
import {
  isStepFailure,
  PIN_BACKOFF_START_MS,
  pinBackoffMs,
  pinnedStep,
  samePin,
  stepsAfter,
  voiceUnavailable,
  type VoicePin,
  type VoiceSwitch,
} from './voice-pin';

/** What one run of a task speaks with: its key, its voices planned once, its pin and the failover events it sent. */
export interface TaskRun {
  task: ClaimedTask;
  workerId: string;
  key: AuthenticatedKey;
  /** The task's job as each chunk sends it (raw PCM, joined and encoded by the assembler). */
  job: SpeechJob;
  plan: VoicePlan;
  voice: TaskVoice;
  signal: AbortSignal;
  /** The task is one request to its client: one failover event per fallback provider, not one per chunk. */
  announced: Set<string>;
}

interface Spoken {
  pcm: Buffer;
  pin: VoicePin;
}

/**
 * Speaks one chunk of a task with the task's one voice (decisions §7): the first chunk walks the chain and pins the
 * step that spoke it; every later chunk goes to that step only. A chunk it fails is tried there again, waits doubling
 * from 1 s, until SVC_TASK_PIN_WAIT_MS since that chunk's first failure; then the rest of the task moves on to the
 * steps after it (a listed voice switch), or, with `voice_switch: "never"`, the task fails with `voice_unavailable`.
 */
@Injectable()
export class ChunkSpeaker {
  private readonly logger = new Logger(ChunkSpeaker.name);

  constructor(
    private readonly repository: SpeechTasksRepository,
    private readonly pins: TaskPinsRepository,
    private readonly speech: SpeechService,
    private readonly failover: FailoverService,
    private readonly env: EnvironmentVariables,
  ) {}

  async speak(run: TaskRun, idx: number): Promise<void> {
    try {
      await this.speakPinned(run, idx);
    } finally {
      run.voice.finish(idx);
    }
  }

  private async speakPinned(run: TaskRun, idx: number): Promise<void> {
    const wait = this.env.SVC_TASK_PIN_WAIT_MS;
    for (let retry = 0; ; ) {
      throwIfAborted(run.signal);
      const pin = run.voice.pin;
      // the task's first chunk: the whole chain, and whichever step speaks it is the task's voice
      if (!pin) {
        const spoken = await this.attempt(run, idx, run.plan);
        if (await this.store(run, idx, spoken)) run.voice.pin ??= spoken.pin;
        return;
      }
      const step = this.pinnedStepOf(run, pin);
      let cause = `${pin.provider} with voice ${pin.voice} is no longer in the key's chain`;
      if (step) {
        try {
          const spoken = await this.attempt(run, idx, run.plan.pinnedTo(step));
          if (await this.store(run, idx, spoken)) return;
          continue; // the task switched while this chunk was spoken: again, with the new voice
        } catch (err) {
          if (!isStepFailure(err)) throw err;
          cause = err.message;
        }
      }
      const waited = step ? await this.pins.failed(run.task.id, run.workerId, idx) : Infinity;
      if (waited === null) throw new TaskLost(run.task.id);
      if (run.voice.pin !== pin) {
        retry = 0; // another lane switched meanwhile: the wait starts over on the new step
        continue;
      }
      // past the wait, only the first chunk still to store moves the task on (a chunk before it may yet be spoken)
      const early = waited >= wait && run.voice.speakingBefore(idx);
      if (waited < wait || early) {
        run.voice.hold(idx);
        const pause = early ? PIN_BACKOFF_START_MS : pinBackoffMs(retry++, waited, wait);
        this.logger.warn(`task ${run.task.id}: ${pin.provider} failed chunk ${idx} (${cause}); again in ${pause} ms`);
        await sleep(pause, undefined, { signal: run.signal }).catch(() => undefined);
        continue;
      }
      if (run.task.voiceSwitch === 'never') throw voiceUnavailable(pin, idx, waited, cause);
      if (await this.switchFrom(run, idx, pin, step, cause)) return;
    }
  }

  /** The pinned step as the key's chain has it now, if it still speaks the pinned voice (its voice_map may have changed). */
  private pinnedStepOf(run: TaskRun, pin: VoicePin): PlannedStep | null {
    const step = pinnedStep(run.plan.steps, pin);
    try {
      return step && run.plan.at(step).voiceId === pin.voice ? step : null;
    } catch {
      return null; // it cannot speak the request any more
    }
  }

  /** The rest of the task moves to the first step after the pinned one that speaks this chunk; false: try again. */
  private async switchFrom(
    run: TaskRun,
    idx: number,
    pin: VoicePin,
    step: PlannedStep | null,
    cause: string,
  ): Promise<boolean> {
    const later = stepsAfter(run.plan.steps, step);
    // no later step: the pinned step's own failure, as a chunk failure has always ended (the task is retried later)
    if (later.length === 0) throw new DomainError('all_providers_failed', cause);
    const spoken = await this.attempt(run, idx, run.plan.narrowedTo(later));
    const change: VoiceSwitch = {
      chunk: idx,
      from: { provider: pin.provider, voice: pin.voice },
      to: { provider: spoken.pin.provider, voice: spoken.pin.voice },
      at: Math.floor(Date.now() / 1000),
      reason: cause,
    };
    const redo = await this.pins.switchPin(run.task.id, run.workerId, pin, spoken.pin, change, (chunk) =>
      synthesisProgress(run.task.plan[chunk].chars, run.task.job.output.format),
    );
    if (redo === null) {
      if (!(await this.repository.isOwner(run.task.id, run.workerId))) throw new TaskLost(run.task.id);
      return false; // another lane switched first
    }
    this.logger.warn(
      `task ${run.task.id} switched voice at chunk ${idx}: ${pin.provider} (${pin.voice}) → ${spoken.pin.provider} (${spoken.pin.voice}); ${redo.length} later chunks spoken again`,
    );
    run.voice.pin = spoken.pin;
    run.voice.giveBack(redo);
    return this.store(run, idx, spoken);
  }

  /** Stored: true; refused because the task switched voice meanwhile: false; another worker's now: TaskLost. */
  private async store(run: TaskRun, idx: number, spoken: Spoken): Promise<boolean> {
    const served = spoken.pin;
    const stored = await this.repository.storeChunk(run.task.id, run.workerId, {
      idx,
      pcm: spoken.pcm,
      provider: served.provider,
      level: served.level,
      pin: served,
      chars: synthesisProgress(run.task.plan[idx].chars, run.task.job.output.format),
    });
    if (stored) return true;
    if (!(await this.repository.isOwner(run.task.id, run.workerId))) throw new TaskLost(run.task.id);
    // not stored and still ours: the pin moved (speak again), or this chunk was stored already (done)
    return !(run.voice.pin && !samePin(run.voice.pin, served));
  }

  /** One synthesis of the chunk over `plan`'s steps, through the failover core: its audio and the step that spoke it. */
  private async attempt(run: TaskRun, idx: number, plan: VoicePlan): Promise<Spoken> {
    // tracing hook: each chunk's SERVER span, linked to the request that created the task
    const origin = tracing.on ? tracing.linkedOrigin('speech_task chunk', run.task.traceparent ?? null) : null;
    const call = openCall(this.failover, chunkRequestId(run.task.id, idx), run.key, 'speech', run.signal, origin);
    call.scope.failoversAnnounced = run.announced;
    const job: SpeechJob = { ...run.job, text: run.task.plan[idx].text };
    return withCall(call, async () => {
      const pcm = await this.collect(call, job, idx, plan, run.signal);
      const served = call.scope.served;
      const step = served && plan.steps.find((s) => s.provider === served.provider && s.level === served.level);
      if (!served || !step) throw new Error(`chunk ${idx} of task ${run.task.id} has audio but no serving step`);
      return {
        pcm,
        pin: { provider: served.provider, model: served.model, voice: plan.at(step).voiceId, level: served.level },
      };
    });
  }

  /** The chunk's raw s16le, whole frames only; an upstream that breaks off mid-chunk fails the chunk (it is redone). */
  private async collect(
    call: ProxiedCall,
    job: SpeechJob,
    idx: number,
    plan: VoicePlan,
    signal: AbortSignal,
  ): Promise<Buffer> {
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
      { plan, maxSeconds: this.env.SVC_MAX_TASK_AUDIO_SECONDS },
    );
    // an aborted synthesis ends early without an error: never store it as the chunk
    throwIfAborted(signal);
    if (failure.error) throw failure.error;
    const pcm = Buffer.concat(parts);
    const frameBytes = 2 * job.output.channels;
    return pcm.length % frameBytes === 0 ? pcm : pcm.subarray(0, pcm.length - (pcm.length % frameBytes));
  }
}
