import { DomainError } from '../common/errors/domain-error';

/**
 * Letters and digits one second of speech can carry at most, at speed 1: well above any voice's rate
 * (fast English is ~15, espeak-ng's fastest ~45 at speed 2), so the estimate below is a lower bound.
 */
const MAX_SPOKEN_PER_SECOND = 60;

/** Seconds of audio `text` takes at least at `speed`; punctuation and spaces are not counted (they may be silent). */
export function minimumAudioSeconds(text: string, speed: number): number {
  const spoken = text.match(/[\p{L}\p{N}]/gu)?.length ?? 0;
  return spoken / (MAX_SPOKEN_PER_SECOND * speed);
}

/** Seconds in `bytes` of encoded audio where the bytes tell (pcm, wav, µ-law, constant-bitrate mp3); null for FLAC and Opus. */
export function encodedSeconds(
  bytes: number,
  output: { format: string; sampleRate: number; channels: number },
  bitrate: number,
): number | null {
  switch (output.format) {
    case 'pcm':
    case 'wav':
      return bytes / (2 * output.channels * output.sampleRate);
    case 'pcmu_raw':
    case 'pcmu_wav':
      return bytes / (output.channels * output.sampleRate);
    case 'mp3':
      return (bytes * 8) / bitrate;
    default:
      return null;
  }
}

export function audioTooLong(
  limitSeconds: number,
  detail = 'this text would make',
  setting = 'SVC_MAX_AUDIO_SECONDS',
): DomainError {
  return new DomainError('audio_too_long', `The audio ${detail} is over the limit of ${limitSeconds} s (${setting}).`);
}

/** 413 `audio_too_long` before any work when even the shortest reading of the text is over the cap. */
export function assertAudioFits(text: string, speed: number, limitSeconds: number, setting?: string): void {
  if (minimumAudioSeconds(text, speed) > limitSeconds) throw audioTooLong(limitSeconds, undefined, setting);
}
