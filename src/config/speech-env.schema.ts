import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { cpus } from 'node:os';
import { toSeconds } from './env-transforms';

/**
 * The speech settings of the environment (WebSockets, async tasks, the audio pool, the audio caps): the base
 * of EnvironmentVariables, so one object still holds every setting and one validation reads them all.
 */
export abstract class SpeechEnvironment {
  /** A speech WebSocket with no message in either direction for this long is closed. */
  @IsOptional()
  @IsInt()
  @Min(1000)
  SVC_WS_IDLE_MS: number = 120000;

  /** A speech WebSocket client that leaves 1 MiB of audio unread for this long is disconnected. */
  @IsOptional()
  @IsInt()
  @Min(100)
  SVC_WS_STALL_MS: number = 15000;

  /** Async speech tasks one key may have queued or processing at once, over all replicas; more are refused with 429. */
  @IsOptional()
  @IsInt()
  @Min(1)
  SVC_TASKS_MAX_PENDING_PER_KEY: number = 50;

  /** Open speech WebSockets one key may hold on one replica; more are refused with 429. Unset: the key's share of the audio pool (SVC_AUDIO_JOBS_PER_KEY). */
  @IsOptional()
  @IsInt()
  @Min(1)
  SVC_WS_MAX_STREAMS_PER_KEY?: number;

  /** How long a completed async speech task's audio is kept: seconds, or a duration like `30m`, `24h`, `7d`. */
  @IsOptional()
  @Transform(toSeconds)
  @IsInt({ message: 'SVC_TASK_TTL must be seconds or a duration like 90s, 30m, 24h, 7d' })
  @Min(1)
  SVC_TASK_TTL: number = 86400;

  /**
   * An async task's chunks stay on the step that spoke its first chunk (decisions §7): a chunk that step fails is
   * retried there, with waits doubling from 1 s, for this long from its first failure before the task moves on.
   */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(3600000)
  SVC_TASK_PIN_WAIT_MS: number = 120000;

  /** Worker processes that synthesise, resample and encode audio (default: one less than the cores, at least 1). */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(64)
  SVC_AUDIO_WORKERS: number = Math.max(1, cpus().length - 1);

  /** Audio jobs one worker runs at once, taking turns between slices; more wait in the pool's per-key queues. */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1024)
  SVC_AUDIO_JOBS_PER_WORKER: number = 32;

  /** Audio jobs one key may run at once on a replica (default: half of workers × jobs per worker, at least 1). */
  @IsOptional()
  @IsInt()
  @Min(1)
  SVC_AUDIO_JOBS_PER_KEY?: number;

  /** Audio jobs one key may have waiting for a worker; past it a request is answered 503 `busy`. */
  @IsOptional()
  @IsInt()
  @Min(0)
  SVC_AUDIO_QUEUE_PER_KEY: number = 32;

  /** How long an audio job may wait for a worker before its request is answered 503 `busy`. */
  @IsOptional()
  @IsInt()
  @Min(1)
  SVC_AUDIO_QUEUE_WAIT_MS: number = 10000;

  /** An audio worker busy longer than this on one slice of work (it answers no ping) is killed and replaced; its jobs fail. */
  @IsOptional()
  @IsInt()
  @Min(50)
  SVC_AUDIO_SLICE_TIMEOUT_MS: number = 30000;

  /** Seconds of audio one synchronous speech request, and each stream task, may produce (413 `audio_too_long` past it). */
  @IsOptional()
  @Transform(toSeconds)
  @IsInt({ message: 'SVC_MAX_AUDIO_SECONDS must be seconds or a duration like 90s, 30m, 2h' })
  @Min(1)
  SVC_MAX_AUDIO_SECONDS: number = 1800;

  /** Seconds of audio one async speech task may produce (the task fails with `audio_too_long` past it). */
  @IsOptional()
  @Transform(toSeconds)
  @IsInt({ message: 'SVC_MAX_TASK_AUDIO_SECONDS must be seconds or a duration like 90m, 6h' })
  @Min(1)
  SVC_MAX_TASK_AUDIO_SECONDS: number = 6 * 3600;
}
