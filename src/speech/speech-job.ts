import { DomainError } from '../common/errors/domain-error';
import type { SpeechOutput } from '../providers/provider-adapter';
import { MIX_ONLY_VOICE, type SpeechOptions } from '../providers/speech-fields';
import {
  PCMU_DEFAULT_SAMPLE_RATE,
  type AudioSettingDto,
  type MiniMaxOptionsDto,
  type SpeechRequestDto,
  type VoiceSettingDto,
} from './dto/speech-request.dto';

/** MiniMax's default `audio_setting.sample_rate`. */
const DEFAULT_SAMPLE_RATE = 32000;

export const SYNC_TEXT_LIMIT = 10_000;
export const ASYNC_TEXT_LIMIT = 200_000;

/** A validated speech request with every default applied (decisions §7). */
export interface SpeechJob {
  model: string;
  text: string;
  /** The voice the client asked for (each step maps it with its voice_map); MIX_ONLY_VOICE for a mix by timbre_weights alone. */
  voiceId: string;
  speed: number;
  vol: number;
  pitch: number;
  output: SpeechOutput;
  /** OpenAI's `instructions` (OpenAI request shape only). */
  instructions?: string;
  /** MiniMax's optional fields that shape the speech, as sent (absent when none was). */
  options?: SpeechOptions;
  /** MiniMax's fields about how the answer travels (`stream`, `stream_options`, `output_format`): the route's concern. */
  transport?: SpeechTransport;
}

export interface SpeechTransport {
  stream?: boolean;
  stream_options?: { exclude_aggregated_audio?: boolean };
  output_format?: 'hex' | 'url';
}

/** Copies only the fields present (a DTO instance → plain JSON, as the task row stores it). */
function defined<T extends object>(source: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [name, value] of Object.entries(source) as Array<[keyof T, T[keyof T]]>) {
    if (value === undefined) continue;
    out[name] = Array.isArray(value)
      ? (value.map((item: unknown) => (typeof item === 'object' && item !== null ? { ...item } : item)) as T[keyof T])
      : value;
  }
  return out;
}

const nested = <T extends object>(value: T | undefined): T | undefined =>
  value === undefined ? undefined : (defined(value) as T);

/** MiniMax's optional fields of a request, split into what shapes the speech and what shapes the answer. */
export function optionalFieldsOf(
  dto: MiniMaxOptionsDto & { voice_setting?: VoiceSettingDto; audio_setting?: AudioSettingDto },
): {
  options?: SpeechOptions;
  transport?: SpeechTransport;
} {
  const voice = dto.voice_setting;
  const voiceOptions = voice
    ? defined({
        emotion: voice.emotion,
        text_normalization: voice.text_normalization,
        english_normalization: voice.english_normalization,
        latex_read: voice.latex_read,
      })
    : {};
  const audioOptions = defined({ force_cbr: dto.audio_setting?.force_cbr });
  const options: SpeechOptions = defined({
    voice_setting: Object.keys(voiceOptions).length > 0 ? voiceOptions : undefined,
    audio_setting: Object.keys(audioOptions).length > 0 ? audioOptions : undefined,
    language_boost: dto.language_boost,
    pronunciation_dict: nested(dto.pronunciation_dict),
    timbre_weights: dto.timbre_weights?.map((w) => ({ voice_id: w.voice_id, weight: w.weight })),
    voice_modify: nested(dto.voice_modify),
    subtitle_enable: dto.subtitle_enable,
    subtitle_type: dto.subtitle_type,
    continuous_sound: dto.continuous_sound,
    aigc_watermark: dto.aigc_watermark,
  });
  const transport: SpeechTransport = defined({
    stream: dto.stream,
    stream_options: nested(dto.stream_options),
    output_format: dto.output_format,
  });
  return {
    ...(Object.keys(options).length > 0 ? { options } : {}),
    ...(Object.keys(transport).length > 0 ? { transport } : {}),
  };
}

/**
 * Characters as the limits and the records count them (decisions §7): Unicode code points, so an
 * emoji or a rare CJK ideograph is one character, not the two UTF-16 units of `String.length`.
 */
export function characterCount(text: string): number {
  let count = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count -= 1;
        i += 1;
      }
    }
  }
  return count;
}

/** 413 text_too_long past `limit` characters (sync, stream chunks, async alike). */
export function assertTextLimit(text: string, limit: number, param: string): void {
  // a string of at most `limit` UTF-16 units cannot hold more code points: count only longer ones
  if (text.length <= limit) return;
  const characters = characterCount(text);
  if (characters > limit) {
    throw new DomainError('text_too_long', `'${param}' has ${characters} characters; the limit is ${limit}.`, {
      param,
    });
  }
}

/**
 * `voice_setting.voice_id`, or MIX_ONLY_VOICE when the request names its voices by `timbre_weights` alone (decisions §10):
 * the voice plan then checks the mix's voices, and no voice_id is invented for MiniMax. Neither: 400 naming the field.
 */
function voiceIdOf(dto: SpeechRequestDto): string {
  const voiceId = dto.voice_setting?.voice_id;
  if (voiceId !== undefined) return voiceId;
  if (dto.timbre_weights !== undefined) return MIX_ONLY_VOICE;
  throw new DomainError(
    'missing_field',
    'voice_setting.voice_id is required unless timbre_weights names the voices to mix.',
    { param: 'voice_setting.voice_id' },
  );
}

export function toSpeechJob(dto: SpeechRequestDto, textLimit: number): SpeechJob {
  assertTextLimit(dto.text, textLimit, 'text');
  const audio = dto.audio_setting ?? {};
  return {
    model: dto.model,
    text: dto.text,
    voiceId: voiceIdOf(dto),
    speed: dto.voice_setting?.speed ?? 1,
    vol: dto.voice_setting?.vol ?? 1,
    pitch: dto.voice_setting?.pitch ?? 0,
    output: {
      format: audio.format ?? 'mp3',
      sampleRate:
        audio.sample_rate ?? (audio.format?.startsWith('pcmu_') ? PCMU_DEFAULT_SAMPLE_RATE : DEFAULT_SAMPLE_RATE),
      bitrate: audio.bitrate ?? 128000,
      channels: audio.channel ?? 1,
    },
    ...optionalFieldsOf(dto),
  };
}
