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

export function toSpeechJob(dto: SpeechRequestDto, textLimit: number): SpeechJob {
  if (dto.text.length > textLimit) {
    throw new DomainError('text_too_long', `'text' has ${dto.text.length} characters; the limit is ${textLimit}.`, { param: 'text' });
  }
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
