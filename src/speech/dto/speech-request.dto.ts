import { ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsDefined, IsIn, IsInt, IsNumber, IsOptional, IsPositive, IsString, Max, MaxLength, Min, MinLength, ValidateNested } from 'class-validator';

export const SAMPLE_RATES = [8000, 16000, 22050, 24000, 32000, 44100] as const;
export const BITRATES = [32000, 64000, 128000, 256000] as const;
export const FORMATS = ['mp3', 'wav', 'pcm', 'flac'] as const;

export class VoiceSettingDto {
  /** Built-in voice of a provider, or a custom voice id (cloning or design). */
  @IsString() @MinLength(1) @MaxLength(256)
  voice_id!: string;

  /** Speech speed multiplier, 0.5 to 2. */
  @ApiPropertyOptional({ default: 1, minimum: 0.5, maximum: 2 })
  @IsOptional() @IsNumber({ allowNaN: false, allowInfinity: false }) @Min(0.5) @Max(2)
  speed?: number;

  /** Volume, above 0 up to 10. */
  @ApiPropertyOptional({ default: 1, exclusiveMinimum: true, minimum: 0, maximum: 10 })
  @IsOptional() @IsNumber({ allowNaN: false, allowInfinity: false }) @IsPositive() @Max(10)
  vol?: number;

  /** Pitch adjustment in semitones, -12 to 12. */
  @ApiPropertyOptional({ default: 0, minimum: -12, maximum: 12, type: 'integer' })
  @IsOptional() @IsInt() @Min(-12) @Max(12)
  pitch?: number;
}

export class AudioSettingDto {
  /** Hz. */
  @ApiPropertyOptional({ type: 'integer', enum: SAMPLE_RATES, default: 32000 })
  @IsOptional() @IsIn(SAMPLE_RATES)
  sample_rate?: number;

  /** Bits per second (mp3). */
  @ApiPropertyOptional({ type: 'integer', enum: BITRATES, default: 128000 })
  @IsOptional() @IsIn(BITRATES)
  bitrate?: number;

  @ApiPropertyOptional({ enum: FORMATS, default: 'mp3' })
  @IsOptional() @IsIn(FORMATS)
  format?: (typeof FORMATS)[number];

  /** Number of channels. */
  @ApiPropertyOptional({ type: 'integer', enum: [1, 2], default: 1 })
  @IsOptional() @IsIn([1, 2])
  channel?: number;
}

/** MiniMax's T2A request shape (the documented default). */
export class SpeechRequestDto {
  /** `speech-02-hd`: selects the entry step of the key's chain. */
  @IsString() @MinLength(1) @MaxLength(200)
  model!: string;

  /** Text to convert: 1 to 10,000 characters (longer text: use an async task). */
  @IsString() @MinLength(1)
  text!: string;

  // ValidateNested alone lets an absent object through
  @IsDefined() @ValidateNested() @Type(() => VoiceSettingDto)
  voice_setting!: VoiceSettingDto;

  @IsOptional() @ValidateNested() @Type(() => AudioSettingDto)
  audio_setting?: AudioSettingDto;
}

/** The async task's body: the same shape, with long text and a voice of the chain's own when none is given (interface §4.2). */
export class AsyncSpeechRequestDto extends OmitType(SpeechRequestDto, ['text', 'voice_setting'] as const) {
  /** Text to convert: 1 to 200,000 characters. */
  @IsString() @MinLength(1)
  text!: string;

  /** Optional: without it the entry step speaks with its default voice (its `voice_map` `*` entry, else its provider's default). */
  @IsOptional() @ValidateNested() @Type(() => VoiceSettingDto)
  voice_setting?: VoiceSettingDto;
}
