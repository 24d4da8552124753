import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';

/** A form field sent empty is a field left out: an HTML form (Swagger UI's included) sends every field it shows. */
const EmptyIsAbsent = () => Transform(({ value }: { value: unknown }) => (value === '' ? undefined : value));

/**
 * The multipart form of `POST /v1/audio/voices`, as the official SDK's `audio.voices.create` sends it:
 * `name`, `consent` and the `audio_sample` file to clone a voice; or `type: prompt` with `prompt` to design one.
 */
export class CreateVoiceDto {
  /** Name of the new voice, 1 to 256 characters. */
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  name!: string;

  /** Id of a consent recording of this key (`vc_…`); required to clone a voice from `audio_sample`. */
  @EmptyIsAbsent()
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(128)
  consent?: string;

  /** `audio_sample` (default): clone from the sample; `prompt`: design from `prompt`, like `POST /v1/audio/voices/design`. */
  @ApiPropertyOptional({ enum: ['audio_sample', 'prompt'], default: 'audio_sample' })
  @EmptyIsAbsent()
  @IsOptional()
  @IsIn(['audio_sample', 'prompt'])
  type?: 'audio_sample' | 'prompt';

  /** With `type: prompt`: the description of the voice. */
  @EmptyIsAbsent()
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(2000)
  prompt?: string;

  /** With `type: prompt`: the text the provider reads for its trial clip (MiniMax `preview_text`, at most 500 characters). */
  @EmptyIsAbsent()
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(500)
  script_hint?: string;

  /** Accepted for the SDK's sake (its voice creation model); the provider's own design model is used. */
  @EmptyIsAbsent()
  @IsOptional()
  @IsString()
  @MaxLength(64)
  model?: string;
}

/** The multipart form (for the OpenAPI document). */
export class CreateVoiceForm extends CreateVoiceDto {
  @ApiPropertyOptional({
    type: 'string',
    format: 'binary',
    description:
      'Voice sample to clone (type decided from the bytes). MiniMax: mp3, m4a or wav, 10 s to 5 min, at most 20 MiB; OpenAI: at most 30 s and 10 MiB.',
  })
  audio_sample?: unknown;
}

export class DesignVoiceDto {
  /** Name of the new voice, 1 to 256 characters. */
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  name!: string;

  /** Description of the voice to design, e.g. "a calm, low-pitched narrator". */
  @IsString()
  @MinLength(1)
  @MaxLength(2000)
  prompt!: string;

  /** Text the provider reads once to try the voice out (MiniMax requires it; at most 500 characters). */
  @IsString()
  @MinLength(1)
  @MaxLength(500)
  preview_text!: string;
}

export class CustomVoiceDto {
  /** `voice_…`: send it as `voice_setting.voice_id` (or OpenAI's `voice`). */
  id!: string;
  @ApiProperty({ type: 'string', enum: ['audio.voice'] })
  object!: 'audio.voice';
  name!: string;
  /** `audio_sample`: cloned from a sample; `prompt`: designed from a description. */
  @ApiProperty({ enum: ['audio_sample', 'prompt'] })
  type!: 'audio_sample' | 'prompt';
  /** The consent behind a cloned voice; null for a designed one. */
  @ApiProperty({ type: String, nullable: true })
  consent_id!: string | null;
  /** The provider that holds the voice: speech with it goes there first. */
  provider!: string;
  /** Unix time in seconds. */
  @ApiProperty({ type: 'integer' })
  created_at!: number;
  /** The description a designed voice was made from. */
  prompt?: string;
}

export class CustomVoiceDeletedDto {
  id!: string;
  deleted!: boolean;
  @ApiProperty({ type: 'string', enum: ['audio.voice.deleted'] })
  object!: 'audio.voice.deleted';
}
