import { DomainError } from '../common/errors/domain-error';
import type { SpeechOutput } from '../failover/provider-adapter';
import type { SpeechRequestDto } from './dto/speech-request.dto';

export const SYNC_TEXT_LIMIT = 10_000;
export const ASYNC_TEXT_LIMIT = 200_000;

/** A validated speech request with every default applied (decisions §7). */
export interface SpeechJob {
  model: string;
  text: string;
  /** The voice the client asked for (each step maps it with its voice_map). */
  voiceId: string;
  speed: number;
  vol: number;
  pitch: number;
  output: SpeechOutput;
  /** OpenAI's `instructions` (OpenAI request shape only). */
  instructions?: string;
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
    throw new DomainError('text_too_long', `'${param}' has ${characters} characters; the limit is ${limit}.`, { param });
  }
}

export function toSpeechJob(dto: SpeechRequestDto, textLimit: number): SpeechJob {
  assertTextLimit(dto.text, textLimit, 'text');
  const audio = dto.audio_setting ?? {};
  return {
    model: dto.model,
    text: dto.text,
    voiceId: dto.voice_setting.voice_id,
    speed: dto.voice_setting.speed ?? 1,
    vol: dto.voice_setting.vol ?? 1,
    pitch: dto.voice_setting.pitch ?? 0,
    output: {
      format: audio.format ?? 'mp3',
      sampleRate: audio.sample_rate ?? 32000,
      bitrate: audio.bitrate ?? 128000,
      channels: audio.channel ?? 1,
    },
  };
}
