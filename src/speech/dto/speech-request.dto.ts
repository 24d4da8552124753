import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsDefined,
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
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import type { SpeechFormat } from '../../providers/provider-adapter';
import { EMOTIONS, LANGUAGE_BOOSTS, SOUND_EFFECTS, SUBTITLE_TYPES } from '../../providers/speech-fields';
import { VOICE_SWITCH_POLICIES, type VoiceSwitchPolicy } from '../tasks/voice-pin';

export const SAMPLE_RATES = [8000, 16000, 22050, 24000, 32000, 44100] as const;
export const BITRATES = [32000, 64000, 128000, 256000] as const;
/** MiniMax's `audio_setting.format` values (T2A v2): `pcmu_*` is G.711 µ-law, raw or in a WAV (format tag 7). */
export const FORMATS = ['mp3', 'wav', 'pcm', 'flac', 'opus', 'pcmu_raw', 'pcmu_wav'] as const;
/** µ-law's usual rate (telephony), used when a `pcmu_*` request names no `sample_rate`. */
export const PCMU_DEFAULT_SAMPLE_RATE = 8000;

export class VoiceSettingDto {
  /** Built-in voice of a provider, or a custom voice id (cloning or design). Optional when `timbre_weights` names the voices. */
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  voice_id?: string;

  /** Speech speed multiplier, 0.5 to 2. */
  @ApiPropertyOptional({ default: 1, minimum: 0.5, maximum: 2 })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0.5)
  @Max(2)
  speed?: number;

  /** Volume, above 0 up to 10. */
  @ApiPropertyOptional({ default: 1, exclusiveMinimum: true, minimum: 0, maximum: 10 })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsPositive()
  @Max(10)
  vol?: number;

  /** Pitch adjustment in semitones, -12 to 12. */
  @ApiPropertyOptional({ default: 0, minimum: -12, maximum: 12, type: 'integer' })
  @IsOptional()
  @IsInt()
  @Min(-12)
  @Max(12)
  pitch?: number;

  /** MiniMax's emotion for the voice (`fluent` and `whisper` only on MiniMax's newer models). Other providers: see docs/providers.md. */
  @ApiPropertyOptional({ enum: EMOTIONS })
  @IsOptional()
  @IsIn(EMOTIONS)
  emotion?: (typeof EMOTIONS)[number];

  /** MiniMax: normalise Chinese and English text (numbers, dates) before speaking. */
  @IsOptional()
  @IsBoolean()
  text_normalization?: boolean;

  /** MiniMax: normalise English text (better number reading, a little more latency). */
  @IsOptional()
  @IsBoolean()
  english_normalization?: boolean;

  /** MiniMax: read LaTeX formulas aloud (formulas between dollar signs). */
  @IsOptional()
  @IsBoolean()
  latex_read?: boolean;
}

export class StreamOptionsDto {
  /** MiniMax: leave the whole clip out of the stream's final chunk (the gateway's audio answer never repeats it anyway). */
  @IsOptional()
  @IsBoolean()
  exclude_aggregated_audio?: boolean;
}

export class PronunciationDictDto {
  /** Replacements such as `"omg/oh my god"`, or Chinese tones as digits (`"处理/(chu3)(li3)"`). */
  @ApiPropertyOptional({ type: [String] })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(1000)
  @IsString({ each: true })
  @MinLength(1, { each: true })
  @MaxLength(1000, { each: true })
  tone?: string[];
}

export class TimbreWeightDto {
  /** A voice to mix. */
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  voice_id!: string;

  /** Its weight in the mix, an integer 1 to 100. */
  @ApiProperty({ type: 'integer', minimum: 1, maximum: 100 })
  @IsDefined()
  @IsInt()
  @Min(1)
  @Max(100)
  weight!: number;
}

export class VoiceModifyDto {
  /** Deeper (-100) to brighter (100). */
  @ApiPropertyOptional({ type: 'integer', minimum: -100, maximum: 100 })
  @IsOptional()
  @IsInt()
  @Min(-100)
  @Max(100)
  pitch?: number;

  /** Stronger (-100) to softer (100). */
  @ApiPropertyOptional({ type: 'integer', minimum: -100, maximum: 100 })
  @IsOptional()
  @IsInt()
  @Min(-100)
  @Max(100)
  intensity?: number;

  /** Fuller (-100) to crisper (100). */
  @ApiPropertyOptional({ type: 'integer', minimum: -100, maximum: 100 })
  @IsOptional()
  @IsInt()
  @Min(-100)
  @Max(100)
  timbre?: number;

  @ApiPropertyOptional({ enum: SOUND_EFFECTS })
  @IsOptional()
  @IsIn(SOUND_EFFECTS)
  sound_effects?: (typeof SOUND_EFFECTS)[number];
}

/**
 * MiniMax's optional T2A v2 fields (decisions §7), accepted on every speech path. A MiniMax step receives them
 * as sent; other providers use what they can express (docs/providers.md) and the answer's `x-svc-ignored-fields`
 * names the rest.
 */
export class MiniMaxOptionsDto {
  /** `/v1/audio/speech` always sends the audio as it is made (chunked); `true` or `false` changes nothing there. */
  @IsOptional()
  @IsBoolean()
  stream?: boolean;

  @IsOptional()
  @ValidateNested()
  @Type(() => StreamOptionsDto)
  stream_options?: StreamOptionsDto;

  /** How MiniMax's JSON carries the audio (`hex` or `url`); `/v1/audio/speech` answers with the audio bytes whatever it says. */
  @ApiPropertyOptional({ enum: ['hex', 'url'] })
  @IsOptional()
  @IsIn(['hex', 'url'])
  output_format?: 'hex' | 'url';

  /** MiniMax: the language (or `auto`) to favour. */
  @ApiPropertyOptional({ enum: LANGUAGE_BOOSTS })
  @IsOptional()
  @IsIn(LANGUAGE_BOOSTS)
  language_boost?: (typeof LANGUAGE_BOOSTS)[number];

  @IsOptional()
  @ValidateNested()
  @Type(() => PronunciationDictDto)
  pronunciation_dict?: PronunciationDictDto;

  /** MiniMax: a mix of up to 4 voices. */
  @ApiPropertyOptional({ type: [TimbreWeightDto], minItems: 1, maxItems: 4 })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(4)
  @ValidateNested({ each: true })
  @Type(() => TimbreWeightDto)
  timbre_weights?: TimbreWeightDto[];

  @IsOptional()
  @ValidateNested()
  @Type(() => VoiceModifyDto)
  voice_modify?: VoiceModifyDto;

  /** MiniMax: make subtitles (their file is not part of an audio answer). */
  @IsOptional()
  @IsBoolean()
  subtitle_enable?: boolean;

  @ApiPropertyOptional({ enum: SUBTITLE_TYPES })
  @IsOptional()
  @IsIn(SUBTITLE_TYPES)
  subtitle_type?: (typeof SUBTITLE_TYPES)[number];

  /** MiniMax (speech-2.8 models): smoother joins between sentences. */
  @IsOptional()
  @IsBoolean()
  continuous_sound?: boolean;

  /** MiniMax: add its AIGC watermark to the audio. */
  @IsOptional()
  @IsBoolean()
  aigc_watermark?: boolean;
}

export class AudioSettingDto {
  /** Hz. */
  @ApiPropertyOptional({ type: 'integer', enum: SAMPLE_RATES, default: 32000 })
  @IsOptional()
  @IsIn(SAMPLE_RATES)
  sample_rate?: number;

  /** Bits per second (mp3). */
  @ApiPropertyOptional({ type: 'integer', enum: BITRATES, default: 128000 })
  @IsOptional()
  @IsIn(BITRATES)
  bitrate?: number;

  /** `opus` is Ogg Opus; `pcmu_raw` and `pcmu_wav` are G.711 µ-law (8 kHz unless `sample_rate` says otherwise). */
  @ApiPropertyOptional({ enum: FORMATS, default: 'mp3' })
  @IsOptional()
  @IsIn(FORMATS)
  // the OpenAI shape maps its `aac` here too (validated by its own DTO)
  format?: SpeechFormat;

  /** Number of channels. */
  @ApiPropertyOptional({ type: 'integer', enum: [1, 2], default: 1 })
  @IsOptional()
  @IsIn([1, 2])
  channel?: number;

  /** MiniMax: constant bitrate for mp3. A MiniMax step receives it; other steps ignore it (mp3 made here is always constant). */
  @IsOptional()
  @IsBoolean()
  force_cbr?: boolean;
}

/** `voice_setting` may be left out only by a request whose `timbre_weights` names its voices (decisions §10). */
export function voiceSettingRequired(dto: { voice_setting?: unknown; timbre_weights?: unknown }): boolean {
  return dto.voice_setting !== undefined || dto.timbre_weights === undefined;
}

/** MiniMax's T2A request shape (the documented default). */
export class SpeechRequestDto extends MiniMaxOptionsDto {
  /** `speech-02-hd`: selects the entry step of the key's chain. */
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  model!: string;

  /** Text to convert: 1 to 10,000 characters (longer text: use an async task). */
  @IsString()
  @MinLength(1)
  text!: string;

  // required unless timbre_weights names the voices; ValidateNested alone lets an absent object through
  @ValidateIf(voiceSettingRequired)
  @IsDefined()
  @ValidateNested()
  @Type(() => VoiceSettingDto)
  voice_setting?: VoiceSettingDto;

  @IsOptional()
  @ValidateNested()
  @Type(() => AudioSettingDto)
  audio_setting?: AudioSettingDto;
}

/** The async task's body: the same shape, with long text and a voice of the chain's own when none is given (decisions §7; the route in docs/api.md). */
export class AsyncSpeechRequestDto extends OmitType(SpeechRequestDto, ['text', 'voice_setting'] as const) {
  /** Text to convert: 1 to 200,000 characters. */
  @IsString()
  @MinLength(1)
  text!: string;

  /** Optional: without it the entry step speaks with its default voice (its `voice_map` `*` entry, else its provider's default). */
  @IsOptional()
  @ValidateNested()
  @Type(() => VoiceSettingDto)
  voice_setting?: VoiceSettingDto;

  /**
   * Every chunk of the task is spoken by the step, and with the voice, that spoke its first chunk; when that step
   * fails a chunk for `SVC_TASK_PIN_WAIT_MS` (default 2 min), `allowed` goes on with the next step's voice (listed in
   * the task's `voice_switches`), `never` fails the task with `voice_unavailable`.
   */
  @ApiPropertyOptional({ enum: VOICE_SWITCH_POLICIES, default: 'allowed' })
  @IsOptional()
  @IsIn(VOICE_SWITCH_POLICIES)
  voice_switch?: VoiceSwitchPolicy;
}
