import { Injectable } from '@nestjs/common';
import { DomainError, notFound } from '../../common/errors/domain-error';
import { newId } from '../../common/ids';
import { EnvironmentVariables } from '../../config/env.schema';
import { GatewayConfig } from '../../config/gateway-config';
import { ignoredBy } from '../../providers/speech-fields';
import { JobQueue } from '../../database/job-queue';
import { StorageSpace } from '../../database/storage-space';
import type { AuthenticatedKey } from '../../keys/key-directory';
import { contentTypeFor } from '../../audio/encoders';
import type { AsyncSpeechRequestDto } from '../dto/speech-request.dto';
import { assertAudioFits } from '../audio-cap';
import { ASYNC_TEXT_LIMIT, characterCount, type SpeechTransport, toSpeechJob } from '../speech-job';
import { VoicesService } from '../../voices/voices.service';
import { planChunks } from './chunk-plan';
import { SpeechTaskDto } from './dto/speech-task.dto';
import { SpeechTaskEntity, SpeechTaskStatus } from './speech-task.entity';
import { SpeechTasksRepository } from './speech-tasks.repository';
import { enqueueTask } from './task-queue';

export interface TaskDownload {
  contentType: string;
  length: number;
  parts: AsyncIterable<Buffer>;
}

const seconds = (date: Date | null): number | null => (date ? Math.floor(date.getTime() / 1000) : null);

/** A completed task past its expiry is expired even before the retention job has removed its file. */
const statusOf = (row: SpeechTaskEntity, now = Date.now()): SpeechTaskStatus =>
  row.status === 'completed' && row.expiresAt && row.expiresAt.getTime() <= now ? 'expired' : row.status;

const toDto = (row: SpeechTaskEntity): SpeechTaskDto => {
  const status = statusOf(row);
  return {
    id: row.id,
    object: 'audio.speech.task',
    status,
    model: row.model,
    created_at: Math.floor(row.createdAt.getTime() / 1000),
    started_at: seconds(row.startedAt),
    completed_at: seconds(row.completedAt),
    expires_at: seconds(row.expiresAt),
    characters: row.characters,
    characters_done: row.charactersDone,
    provider: row.provider,
    fallback_level: row.fallbackLevel,
    audio: row.audio && (status === 'completed' || status === 'expired') ? row.audio : null,
    error: status === 'failed' ? (row.error ?? { code: 'internal_error', message: 'The task failed.' }) : null,
    voice_switches: row.voiceSwitches,
  };
};

const taskNotFound = (id: string): DomainError => notFound('speech task', id, 'task_id');

/** Async speech for long text: submit (checked up front like sync speech), poll, download. */
@Injectable()
export class SpeechTasksService {
  constructor(
    private readonly repository: SpeechTasksRepository,
    private readonly queue: JobQueue,
    private readonly voices: VoicesService,
    private readonly env: EnvironmentVariables,
    private readonly gateway: GatewayConfig,
    private readonly space: StorageSpace,
  ) {}

  /** The task row and its job are committed together: a 202 always means a worker will run it. */
  async create(key: AuthenticatedKey, dto: AsyncSpeechRequestDto): Promise<SpeechTaskDto> {
    return (await this.submit(key, dto)).task;
  }

  /**
   * `create`, and the request's fields that will not be used (the `x-svc-ignored-fields` of the 202): those the
   * entry step's provider kind cannot express, and those of how the answer travels (the task's file is the audio).
   */
  async submit(
    key: AuthenticatedKey,
    dto: AsyncSpeechRequestDto,
    traceparent: string | null = null,
  ): Promise<{ task: SpeechTaskDto; ignored: string[] }> {
    // a mix named by timbre_weights alone needs no voice_setting; without either, the entry step's default voice
    const voice =
      dto.voice_setting ??
      (dto.timbre_weights ? undefined : { voice_id: await this.voices.defaultVoice(key, dto.model) });
    const job = toSpeechJob({ ...dto, voice_setting: voice }, ASYNC_TEXT_LIMIT);
    assertAudioFits(job.text, job.speed, this.env.SVC_MAX_TASK_AUDIO_SECONDS, 'SVC_MAX_TASK_AUDIO_SECONDS');
    // the same 400s as sync speech, before anything is stored (each chunk plans its voices again when it runs)
    const voices = await this.voices.plan(key, job);
    const entry = this.gateway.provider(voices.steps[0].provider);
    const transport: SpeechTransport = job.transport ?? {};
    const ignored = [
      ...(entry ? ignoredBy(entry.kind, job) : []),
      ...(Object.keys(transport) as Array<keyof typeof transport>),
      ...(job.options?.subtitle_enable !== undefined ? ['subtitle_enable'] : []),
      ...(job.options?.subtitle_type !== undefined ? ['subtitle_type'] : []),
    ];
    // a task stores its text and then its audio: refused while the database is short of room (507)
    this.space.assertRoom();
    const plan = planChunks(job.text);
    const id = newId('task');
    const max = this.env.SVC_TASKS_MAX_PENDING_PER_KEY;
    const row = await this.repository.insertWithJob(
      {
        id,
        keyId: key.id,
        model: job.model,
        job,
        plan,
        characters: characterCount(job.text),
        chunksTotal: plan.length,
        voiceSwitch: dto.voice_switch ?? 'allowed',
        traceparent,
      },
      max,
      (manager) => enqueueTask(this.queue, id, manager),
    );
    // one key's backlog must not hold every worker of every replica
    if (!row)
      throw new DomainError(
        'too_many_tasks',
        `This key already has ${max} async speech tasks queued or processing (the limit); wait for one to finish.`,
      );
    return { task: toDto(row), ignored };
  }

  async get(keyId: string, id: string): Promise<SpeechTaskDto> {
    const row = await this.repository.findOwned(keyId, id);
    if (!row) throw taskNotFound(id);
    return toDto(row);
  }

  async download(keyId: string, id: string): Promise<TaskDownload> {
    const row = await this.repository.findOwned(keyId, id);
    if (!row) throw taskNotFound(id);
    const status = statusOf(row);
    switch (status) {
      case 'queued':
      case 'processing':
        throw new DomainError(
          'task_not_completed',
          `The task is ${status} (${row.charactersDone} of ${row.characters} characters done); poll it until it is completed.`,
          {
            param: 'task_id',
          },
        );
      case 'failed':
        throw new DomainError('task_failed', `The task failed: ${row.error?.message ?? 'unknown error'}`, {
          param: 'task_id',
        });
      case 'expired':
        throw new DomainError(
          'task_expired',
          `The audio of this task expired at ${row.expiresAt?.toISOString() ?? 'its retention'} and was deleted.`,
          {
            param: 'task_id',
          },
        );
      case 'completed':
        break;
    }
    const audio = row.audio;
    if (!audio) throw new DomainError('internal_error', 'The completed task has no audio.');
    // read before the 200 goes out: the retention job may have removed the file since the status was read
    const first = audio.bytes > 0 ? await this.repository.resultPart(id, 0) : Buffer.alloc(0);
    if (!first)
      throw new DomainError('task_expired', 'The audio of this task expired and was deleted.', { param: 'task_id' });
    return {
      contentType: contentTypeFor(audio.format, audio.sample_rate, audio.channel),
      length: audio.bytes,
      parts: this.parts(id, first, audio.bytes),
    };
  }

  /** Reads one part at a time, so a long file never sits in memory whole. */
  private async *parts(id: string, first: Buffer, bytes: number): AsyncGenerator<Buffer> {
    if (first.length > 0) yield first;
    let sent = first.length;
    for (let part = 1; sent < bytes; part++) {
      const data = await this.repository.resultPart(id, part);
      if (!data) throw new Error(`task ${id} lost part ${part} of its audio (${sent} of ${bytes} bytes sent)`);
      sent += data.length;
      yield data;
    }
  }
}
