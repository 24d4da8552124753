import { ApiPropertyOptional } from '@nestjs/swagger';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsPositive,
  IsString,
  Max,
  MaxLength,
  Min,
  MinLength,
} from 'class-validator';

/** `POST /v1/files/upload` (multipart: `purpose` and `file`). */
export class FileUploadDto {
  @ApiPropertyOptional({ enum: ['voice_clone', 'prompt_audio'] })
  @IsString()
  @MaxLength(64)
  purpose!: string;
}

export class FileUploadForm extends FileUploadDto {
  @ApiPropertyOptional({ type: 'string', format: 'binary', description: 'The audio to clone from (mp3, m4a or wav).' })
  file?: unknown;
}

/**
 * `POST /v1/voice_clone`: MiniMax's fields, and `consent_id` (an extra field: the gateway clones a voice only
 * with a consent recording of the same key behind it, decisions §6, §10).
 */
export class VoiceCloneRequestDto {
  /** The `file_id` of a `voice_clone` upload of this key. */
  @IsInt()
  @IsPositive()
  file_id!: number;

  /** The name the voice is listed under (MiniMax's rule: 8..256 characters, a letter first). */
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  voice_id!: string;

  /** A consent of this key (`vc_…`): without it nothing is cloned. */
  @ApiPropertyOptional({
    description: 'Gateway extension: a voice consent of this key (`POST /v1/audio/voice_consents`).',
  })
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(128)
  consent_id?: string;

  /** MiniMax's optional fields; the gateway's clone does not use them. */
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  text?: string;

  @IsOptional()
  @IsString()
  @MaxLength(64)
  model?: string;

  @IsOptional()
  @IsBoolean()
  need_noise_reduction?: boolean;

  @IsOptional()
  @IsBoolean()
  need_volume_normalization?: boolean;

  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(1)
  accuracy?: number;

  @IsOptional()
  @IsString()
  @MaxLength(64)
  language_boost?: string;
}

/** `POST /v1/voice_design`. */
export class VoiceDesignRequestDto {
  @IsString()
  @MinLength(1)
  @MaxLength(2000)
  prompt!: string;

  /** Read with the new voice for `trial_audio`; at most 500 characters. */
  @IsString()
  @MinLength(1)
  @MaxLength(500)
  preview_text!: string;

  /** The name the voice is listed under (the voice's id is the gateway's `voice_…`, returned as `voice_id`). */
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  voice_id?: string;
}

export const GET_VOICE_TYPES = ['system', 'voice_cloning', 'voice_generation', 'music_generation', 'all'] as const;

/** `POST /v1/get_voice`. */
export class GetVoiceRequestDto {
  @ApiPropertyOptional({ enum: GET_VOICE_TYPES, default: 'all' })
  @IsOptional()
  @IsIn(GET_VOICE_TYPES)
  voice_type?: (typeof GET_VOICE_TYPES)[number];
}

/** `GET /v1/query/t2a_async_query_v2` and `GET /v1/files/retrieve`. */
export class TaskQueryDto {
  @IsString()
  @MinLength(1)
  @MaxLength(64)
  task_id!: string;
}

export class FileQueryDto {
  @IsString()
  @MinLength(1)
  @MaxLength(64)
  file_id!: string;
}
