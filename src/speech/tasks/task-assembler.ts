import { Injectable, Logger } from '@nestjs/common';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { EnvironmentVariables } from '../../config/env.schema';
import { mp3Bitrate, notEncoded } from '../../audio/encoders';
import { mulawWavHeader } from '../../audio/mulaw';
import { decodePcm16le } from '../../audio/pcm';
import { openEncoder, type StreamEncoder } from '../../audio/pool/pool-jobs';
import { wavHeader } from '../../audio/wav';
import { DomainError } from '../../common/errors/domain-error';
import type { SpeechOutput } from '../../providers/provider-adapter';
import { PartWriter } from './result-parts';
import type { TaskAudio } from './speech-task.entity';
import { ClaimedTask, SpeechTasksRepository } from './speech-tasks.repository';
import { TaskLost, throwIfAborted } from './task-interruptions';
import { assemblyProgress } from './task-progress';

/** Seconds of audio sent to the encoding worker at a time: each answer comes back before the next is read from the database. */
const SLICE_SECONDS = 1;

/** Raw bytes through unchanged (pcm, and wav after its header). */
const passThrough = (): StreamEncoder => ({
  push: () => Promise.resolve(Buffer.alloc(0)),
  end: () => Promise.resolve(Buffer.alloc(0)),
  release: () => undefined,
});

/**
 * Joins a task's stored chunks into one file of the requested format: every chunk's PCM in order
 * through one encoder (one mp3/flac stream, one wav header with the total length), saved in parts.
 */
@Injectable()
export class TaskAssembler {
  private readonly logger = new Logger(TaskAssembler.name);

  constructor(
    private readonly repository: SpeechTasksRepository,
    private readonly env: EnvironmentVariables,
  ) {}

  async assemble(task: ClaimedTask, workerId: string, signal: AbortSignal): Promise<TaskAudio> {
    const { output } = task.job;
    const summary = await this.repository.chunkSummary(task.id);
    if (summary.count !== task.plan.length)
      throw new Error(`task ${task.id} has ${summary.count} of ${task.plan.length} chunks stored`);
    const others = summary.providers.filter((p) => p.provider !== summary.providers[0]?.provider);
    if (others.length > 0) {
      this.logger.log(
        `task ${task.id}: ${others.length} chunk(s) served by ${[...new Set(others.map((p) => p.provider))].join(', ')}, not ${summary.providers[0].provider}`,
      );
    }
    const frameBytes = 2 * output.channels;
    const frames = Math.floor(summary.bytes / frameBytes);
    const limit = this.env.SVC_MAX_TASK_AUDIO_SECONDS;
    if (frames / output.sampleRate > limit) {
      throw new DomainError(
        'audio_too_long',
        `The task's audio is ${Math.floor(frames / output.sampleRate)} s, over the limit of ${limit} s of one task (SVC_MAX_TASK_AUDIO_SECONDS).`,
      );
    }
    if (!(await this.repository.clearResult(task.id, workerId))) throw new TaskLost(task.id);
    const parts = new PartWriter(async (part, data) => {
      if (!(await this.repository.insertPart(task.id, workerId, part, data))) throw new TaskLost(task.id);
    });
    const { encoder, raw } = this.encoderFor(output, frames, task.keyId);
    let ended = false;
    try {
      if (output.format === 'wav')
        await parts.write(wavHeader(output.sampleRate, output.channels, frames * frameBytes));
      if (output.format === 'pcmu_wav')
        await parts.write(mulawWavHeader(output.sampleRate, output.channels, frames * output.channels));

      const sliceBytes = SLICE_SECONDS * output.sampleRate * frameBytes;
      const characters = task.plan.reduce((sum, chunk) => sum + chunk.chars, 0);
      let assembled = 0;
      for (let idx = 0; idx < task.plan.length; idx++) {
        throwIfAborted(signal);
        const pcm = await this.repository.chunkPcm(task.id, idx);
        if (!pcm) throw new Error(`chunk ${idx} of task ${task.id} disappeared`);
        for (let at = 0; at < pcm.length; at += sliceBytes) {
          const slice = pcm.subarray(at, Math.min(pcm.length, at + sliceBytes));
          await parts.write(raw ? slice : await encoder.push(decodePcm16le(slice)));
          await nextTurn();
        }
        // joining counts towards progress too: a task reads 100 % only once its file is ready (issue 17.6)
        assembled += task.plan[idx].chars;
        if (
          idx < task.plan.length - 1 &&
          !(await this.repository.assemblyProgress(
            task.id,
            workerId,
            assemblyProgress(characters, assembled, output.format),
          ))
        ) {
          throw new TaskLost(task.id);
        }
      }
      ended = true;
      await parts.write(await encoder.end());
      // RIFF chunks are word aligned: µ-law's one byte a sample may leave the data odd
      if (output.format === 'pcmu_wav' && (frames * output.channels) % 2 === 1) await parts.write(Buffer.alloc(1));
    } finally {
      // an aborted, lost or failed assembly still ends its encoder: libflac's memory is never returned otherwise
      if (!ended) encoder.release();
    }
    await parts.close();

    const audio: TaskAudio = {
      format: output.format,
      sample_rate: output.sampleRate,
      channel: output.channels,
      bytes: parts.total,
      duration_ms: Math.round((frames * 1000) / output.sampleRate),
      ...(output.format === 'mp3' ? { bitrate: mp3Bitrate(output.sampleRate, output.channels, output.bitrate) } : {}),
    };
    throwIfAborted(signal);
    if (!(await this.repository.complete(task.id, workerId, audio, this.env.SVC_TASK_TTL))) throw new TaskLost(task.id);
    return audio;
  }

  /** The task's encoder; its job takes the key's turn in the audio pool. */
  private encoderFor(output: SpeechOutput, frames: number, key: string): { encoder: StreamEncoder; raw: boolean } {
    const { sampleRate, channels, bitrate } = output;
    const owner = { key };
    switch (output.format) {
      case 'pcm':
      case 'wav':
        return { encoder: passThrough(), raw: true };
      case 'mp3':
        return { encoder: openEncoder({ format: 'mp3', sampleRate, channels, bitrate }, undefined, owner), raw: false };
      case 'flac':
        // the whole length is known here, so STREAMINFO carries the real sample count (players show the duration)
        return {
          encoder: openEncoder(
            { format: 'flac', sampleRate, channels, bitrate, totalFrames: frames },
            undefined,
            owner,
          ),
          raw: false,
        };
      case 'opus':
        return { encoder: openEncoder({ format: 'opus', sampleRate, channels, bitrate }), raw: false };
      case 'pcmu_raw':
      case 'pcmu_wav':
        // the µ-law WAV header was written before the data, as for wav
        return { encoder: openEncoder({ format: 'pcmu_raw', sampleRate, channels, bitrate }), raw: false };
      case 'aac':
        throw new Error(notEncoded('aac'));
    }
  }
}
