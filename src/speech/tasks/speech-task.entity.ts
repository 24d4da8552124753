import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { ProxyKeyEntity } from '../../keys/proxy-key.entity';
import type { SpeechJob } from '../speech-job';
import type { TaskChunk } from './chunk-plan';
import type { VoicePin, VoiceSwitch, VoiceSwitchPolicy } from './voice-pin';

export type SpeechTaskStatus = 'queued' | 'processing' | 'completed' | 'failed' | 'expired';

/** What a completed task's file is; `bitrate` is the mp3 bitrate really encoded. */
export interface TaskAudio {
  format: SpeechJob['output']['format'];
  sample_rate: number;
  channel: number;
  bytes: number;
  duration_ms: number;
  bitrate?: number;
}

export interface TaskError {
  code: string;
  message: string;
}

/** An async speech task: one long text, synthesised chunk by chunk by whichever worker claims it. */
@Entity({ name: 'speech_tasks' })
@Index('speech_tasks_key', ['keyId'])
@Index('speech_tasks_status_heartbeat', ['status', 'heartbeatAt'])
@Index('speech_tasks_status_expires', ['status', 'expiresAt'])
@Index('speech_tasks_key_claimed', ['keyId', 'claimedAt'])
export class SpeechTaskEntity {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_speech_tasks' })
  id!: string;

  @Column({ name: 'key_id', type: 'text' })
  keyId!: string;

  @ManyToOne(() => ProxyKeyEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'key_id', foreignKeyConstraintName: 'FK_speech_tasks_key' })
  key?: ProxyKeyEntity;

  @Column({ type: 'text' })
  status!: SpeechTaskStatus;

  @Column({ type: 'text' })
  model!: string;

  /** The validated request, text included; only the worker reads it (status polls skip the big columns). */
  @Column({ type: 'jsonb', select: false })
  job!: SpeechJob;

  /** The chunks decided at submission, so a new version of the splitter never shifts stored chunk numbers. */
  @Column({ type: 'jsonb', select: false })
  plan!: TaskChunk[];

  @Column({ type: 'integer' })
  characters!: number;

  @Column({ name: 'characters_done', type: 'integer', default: 0 })
  charactersDone!: number;

  @Column({ name: 'chunks_total', type: 'integer' })
  chunksTotal!: number;

  @Column({ name: 'chunks_done', type: 'integer', default: 0 })
  chunksDone!: number;

  /** The provider that served the first chunk. */
  @Column({ type: 'text', nullable: true })
  provider!: string | null;

  /** The W3C traceparent of the request that created the task (its chunks' spans link to it); null while traces are off. */
  @Column({ type: 'text', nullable: true, select: false })
  traceparent!: string | null;

  @Column({ name: 'fallback_level', type: 'integer', nullable: true })
  fallbackLevel!: number | null;

  /** The request's `voice_switch`: `never` fails the task when its pinned step stays down past the pin wait. */
  @Column({ name: 'voice_switch', type: 'text', default: 'allowed' })
  voiceSwitch!: VoiceSwitchPolicy;

  /** The step that speaks every chunk (set by the first chunk, moved only by a voice switch). */
  @Column({ name: 'voice_pin', type: 'jsonb', nullable: true, select: false })
  voicePin!: VoicePin | null;

  /** Chunk number → when the pinned step first failed it (ISO time): the pin wait's start, kept across restarts. */
  @Column({ name: 'pin_waits', type: 'jsonb', default: () => "'{}'", select: false })
  pinWaits!: Record<string, string>;

  @Column({ name: 'voice_switches', type: 'jsonb', default: () => "'[]'" })
  voiceSwitches!: VoiceSwitch[];

  @Column({ type: 'jsonb', nullable: true })
  audio!: TaskAudio | null;

  /** Set when failed (and, while retrying, the last transient error). */
  @Column({ type: 'jsonb', nullable: true })
  error!: TaskError | null;

  /** Claims so far; a task claimed too often is failed instead of retried forever. */
  @Column({ type: 'integer', default: 0 })
  attempts!: number;

  @Column({ name: 'worker_id', type: 'text', nullable: true })
  workerId!: string | null;

  /** Refreshed by the owning worker; a stale one lets another worker take the task over. */
  @Column({ name: 'heartbeat_at', type: 'timestamptz', nullable: true })
  heartbeatAt!: Date | null;

  /** Set on every claim: the fair scheduler gives the next turn to the key claimed least recently. */
  @Column({ name: 'claimed_at', type: 'timestamptz', nullable: true })
  claimedAt!: Date | null;

  /** A task released after a failure is not claimed again before this (its retry's backoff). */
  @Column({ name: 'run_after', type: 'timestamptz', nullable: true })
  runAfter!: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt!: Date | null;

  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true })
  completedAt!: Date | null;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt!: Date | null;
}

/** Raw s16le audio of one synthesised chunk; kept until the file is assembled, so a resumed task never redoes it. */
@Entity({ name: 'speech_task_chunks' })
export class SpeechTaskChunkEntity {
  @PrimaryColumn({ name: 'task_id', type: 'text', primaryKeyConstraintName: 'PK_speech_task_chunks' })
  taskId!: string;

  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'PK_speech_task_chunks' })
  idx!: number;

  @ManyToOne(() => SpeechTaskEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'task_id', foreignKeyConstraintName: 'FK_speech_task_chunks_task' })
  task?: SpeechTaskEntity;

  @Column({ type: 'bytea' })
  pcm!: Buffer;

  @Column({ type: 'text' })
  provider!: string;

  @Column({ name: 'fallback_level', type: 'integer' })
  fallbackLevel!: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}

/** The finished file in ~1 MiB parts, streamed in order on download. */
@Entity({ name: 'speech_task_results' })
export class SpeechTaskResultEntity {
  @PrimaryColumn({ name: 'task_id', type: 'text', primaryKeyConstraintName: 'PK_speech_task_results' })
  taskId!: string;

  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'PK_speech_task_results' })
  part!: number;

  @ManyToOne(() => SpeechTaskEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'task_id', foreignKeyConstraintName: 'FK_speech_task_results_task' })
  task?: SpeechTaskEntity;

  @Column({ type: 'bytea' })
  data!: Buffer;
}
