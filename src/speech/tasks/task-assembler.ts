import { Injectable, Logger } from '@nestjs/common';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { EnvironmentVariables } from '../../config/env.schema';
import { releaseEncoder, type AudioEncoder } from '../audio/encoder';
import { createStreamingEncoder } from '../audio/encoders';
import { createFlacEncoder } from '../audio/flac';
import { decodePcm16le } from '../audio/pcm';
import { wavHeader } from '../audio/wav';
import type { SpeechOutput } from '../../failover/provider-adapter';
import { PartWriter } from './result-parts';
import type { TaskAudio } from './speech-task.entity';
import { ClaimedTask, SpeechTasksRepository } from './speech-tasks.repository';
import { TaskLost, throwIfAborted } from './task-interruptions';

/** Seconds of audio encoded between yields: lamejs runs at 5-30x real time, so a slice blocks the event loop for 30-200 ms. */
const SLICE_SECONDS = 1;

/** Raw bytes through unchanged (pcm, and wav after its header). */
const passThrough = (): AudioEncoder => ({ contentType: 'audio/L16', push: () => Buffer.alloc(0), end: () => Buffer.alloc(0) });

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
    if (summary.count !== task.plan.length) throw new Error(`task ${task.id} has ${summary.count} of ${task.plan.length} chunks stored`);
    const others = summary.providers.filter((p) => p.provider !== summary.providers[0]?.provider);
    if (others.length > 0) {
      this.logger.log(`task ${task.id}: ${others.length} chunk(s) served by ${[...new Set(others.map((p) => p.provider))].join(', ')}, not ${summary.providers[0].provider}`);
    }
    if (!(await this.repository.clearResult(task.id, workerId))) throw new TaskLost(task.id);

    const frameBytes = 2 * output.channels;
    const frames = Math.floor(summary.bytes / frameBytes);
    const parts = new PartWriter(async (part, data) => {
      if (!(await this.repository.insertPart(task.id, workerId, part, data))) throw new TaskLost(task.id);
    });
    const { encoder, raw } = await this.encoderFor(output, frames);
    let ended = false;
    try {
      if (output.format === 'wav') await parts.write(wavHeader(output.sampleRate, output.channels, frames * frameBytes));

      const sliceBytes = SLICE_SECONDS * output.sampleRate * frameBytes;
      for (let idx = 0; idx < task.plan.length; idx++) {
        throwIfAborted(signal);
        const pcm = await this.repository.chunkPcm(task.id, idx);
        if (!pcm) throw new Error(`chunk ${idx} of task ${task.id} disappeared`);
        for (let at = 0; at < pcm.length; at += sliceBytes) {
          const slice = pcm.subarray(at, Math.min(pcm.length, at + sliceBytes));
          await parts.write(raw ? slice : encoder.push(decodePcm16le(slice)));
          await nextTurn();
        }
      }
      ended = true;
      await parts.write(encoder.end());
    } finally {
      // an aborted, lost or failed assembly still ends its encoder: libflac's memory is never returned otherwise
      if (!ended) releaseEncoder(encoder);
    }
    await parts.close();

    const audio: TaskAudio = {
      format: output.format,
      sample_rate: output.sampleRate,
      channel: output.channels,
      bytes: parts.total,
      duration_ms: Math.round((frames * 1000) / output.sampleRate),
      ...(output.format === 'mp3' ? { bitrate: encoder.bitrate ?? output.bitrate } : {}),
    };
    throwIfAborted(signal);
    if (!(await this.repository.complete(task.id, workerId, audio, this.env.SVC_TASK_TTL))) throw new TaskLost(task.id);
    return audio;
  }

  private async encoderFor(output: SpeechOutput, frames: number): Promise<{ encoder: AudioEncoder; raw: boolean }> {
    switch (output.format) {
      case 'pcm':
      case 'wav':
        return { encoder: passThrough(), raw: true };
      case 'mp3':
        return { encoder: await createStreamingEncoder('mp3', output), raw: false };
      case 'flac':
        // the whole length is known here, so STREAMINFO carries the real sample count (players show the duration)
        return { encoder: await createFlacEncoder(output.sampleRate, output.channels, frames), raw: false };
    }
  }
}
