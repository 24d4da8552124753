import type { StreamingFormat } from '../encoders';
import type { PcmShape, TranscodeOutput } from '../transcoder';

/** The offline engine's synthesis of a whole text into `output` (sentence groups, one CPU slice each). */
export interface SpeechJobSpec {
  kind: 'speech';
  text: string;
  voice: string;
  speed: number;
  vol: number;
  pitch: number;
  output: TranscodeOutput;
  /** Output seconds past which the job fails with `audio_too_long`. */
  maxSeconds?: number;
}

/** Raw s16le in (fed chunk by chunk), `output` bytes out. */
export interface TranscodeJobSpec {
  kind: 'transcode';
  from: PcmShape;
  output: TranscodeOutput;
  gain?: number;
  maxSeconds?: number;
}

/** Interleaved samples in (fed), one continuous pcm/mp3/flac stream out; `totalFrames` goes into FLAC's STREAMINFO. */
export interface EncodeJobSpec {
  kind: 'encode';
  format: StreamingFormat;
  sampleRate: number;
  channels: number;
  bitrate: number;
  totalFrames?: number;
}

export interface VoicesJobSpec {
  kind: 'voices';
}

/** What a worker holds now: its other jobs and its live FLAC encoders (tests check that cut jobs release theirs). */
export interface StatsJobSpec {
  kind: 'stats';
}
export interface WorkerStats {
  jobs: number;
  flacEncoders: number;
}

export type JobSpec = SpeechJobSpec | TranscodeJobSpec | EncodeJobSpec | VoicesJobSpec | StatsJobSpec;

/** Why a job failed, as the main process acts on it. */
export type JobErrorCode = 'audio_too_long' | 'voice_not_found' | 'failed';

/** Main process → worker. */
export type ToWorker =
  /** `credit`: how many slices a generated job may send before the main side grants more. */
  | { t: 'start'; id: number; spec: JobSpec; credit: number }
  /** One chunk for a fed job; the worker answers each with exactly one `output`. */
  | { t: 'input'; id: number; data: Uint8Array }
  /** The fed job's input ended: the answer is its tail (`output`), then `done`. */
  | { t: 'end'; id: number }
  | { t: 'credit'; id: number; n: number }
  | { t: 'cancel'; id: number }
  | { t: 'ping'; seq: number };

/** Worker → main process. */
export type FromWorker =
  | { t: 'ready' }
  | { t: 'slice'; id: number; data: Uint8Array }
  | { t: 'output'; id: number; data: Uint8Array }
  | { t: 'done'; id: number; result?: unknown }
  | { t: 'failed'; id: number; code: JobErrorCode; message: string }
  | { t: 'pong'; seq: number };

/** Largest slice a generated job sends at once: a slow consumer holds at most credit × this per job. */
export const SLICE_BYTES = 128 * 1024;
/** Slices a generated job may have in flight before the consumer pulls. */
export const DEFAULT_CREDIT = 4;
