import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { SpeechFormat } from '../../../providers/provider-adapter';
import { FORMATS } from '../../dto/speech-request.dto';

export const TASK_STATUSES = ['queued', 'processing', 'completed', 'failed', 'expired'] as const;

export class SpeechTaskAudioDto {
  @ApiProperty({ enum: FORMATS })
  format!: SpeechFormat;
  /** Hz, as requested. */
  @ApiProperty({ type: 'integer' })
  sample_rate!: number;
  /** Number of channels, as requested. */
  @ApiProperty({ type: 'integer' })
  channel!: number;
  /** Size of the file in bytes (the download's Content-Length). */
  @ApiProperty({ type: 'integer' })
  bytes!: number;
  /** Length of the audio in milliseconds. */
  @ApiProperty({ type: 'integer' })
  duration_ms!: number;
  /** mp3 only: the bitrate really encoded (it may differ from the request at low sample rates). */
  @ApiPropertyOptional({ type: 'integer' })
  bitrate?: number;
}

export class SpeechTaskErrorDto {
  /** e.g. `upstream_rejected`, `voice_not_found`, `all_providers_failed`. */
  code!: string;
  message!: string;
}

export class SpeechTaskVoiceDto {
  provider!: string;
  /** The voice id as that provider knows it (the step's `voice_map`). */
  voice!: string;
}

/** One move of the task to another step's voice (decisions §7). */
export class SpeechTaskVoiceSwitchDto {
  /** The first chunk (0-based) spoken with the new voice; the chunks before it keep the old one. */
  @ApiProperty({ type: 'integer' })
  chunk!: number;
  from!: SpeechTaskVoiceDto;
  to!: SpeechTaskVoiceDto;
  /** When the task switched (Unix seconds). */
  @ApiProperty({ type: 'integer' })
  at!: number;
  /** Why: the pinned step's last failure of that chunk, after `SVC_TASK_PIN_WAIT_MS` of retries. */
  reason!: string;
}

/** An async speech task (decisions §7). Times are Unix seconds. */
export class SpeechTaskDto {
  /** Identifier, `task_…`. */
  id!: string;
  @ApiProperty({ type: 'string', enum: ['audio.speech.task'] })
  object!: 'audio.speech.task';
  @ApiProperty({ enum: TASK_STATUSES })
  status!: (typeof TASK_STATUSES)[number];
  model!: string;
  @ApiProperty({ type: 'integer' })
  created_at!: number;
  @ApiProperty({ type: 'integer', nullable: true })
  started_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true })
  completed_at!: number | null;
  /** When the audio stops being downloadable (completed tasks). */
  @ApiProperty({ type: 'integer', nullable: true })
  expires_at!: number | null;
  /** Characters of the submitted text. */
  @ApiProperty({ type: 'integer' })
  characters!: number;
  /** Progress in characters, joining the chunks into the file included: equal to `characters` only once the audio is ready. */
  @ApiProperty({ type: 'integer' })
  characters_done!: number;
  /** Provider of the deepest fallback level among the chunks done so far (the entry step's when no chunk failed over). */
  @ApiProperty({ type: 'string', nullable: true })
  provider!: string | null;
  @ApiProperty({ type: 'integer', nullable: true })
  fallback_level!: number | null;
  @ApiProperty({ type: SpeechTaskAudioDto, nullable: true })
  audio!: SpeechTaskAudioDto | null;
  @ApiProperty({ type: SpeechTaskErrorDto, nullable: true })
  error!: SpeechTaskErrorDto | null;
  /**
   * Every chunk is spoken by the step, and with the voice, that spoke the first one; a chunk that step fails is
   * retried there for `SVC_TASK_PIN_WAIT_MS`. Each time the task had to go on with another step's voice instead
   * (request `voice_switch: "allowed"`, the default), in order; empty when the whole file has one voice.
   */
  @ApiProperty({ type: [SpeechTaskVoiceSwitchDto] })
  voice_switches!: SpeechTaskVoiceSwitchDto[];
}
