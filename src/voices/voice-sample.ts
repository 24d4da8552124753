import { DomainError } from '../common/errors/domain-error';
import type { VoiceSampleRules } from '../providers/provider-adapter';
import { parseWavHeader, scanMp3Frames } from '../audio/parse';

const EXTENSIONS: Record<string, string> = {
  'audio/wav': 'wav',
  'audio/mpeg': 'mp3',
  'audio/mp4': 'm4a',
  'audio/ogg': 'ogg',
  'audio/flac': 'flac',
  'audio/webm': 'webm',
  'audio/aac': 'aac',
};

const NAMES: Record<string, string> = { ...EXTENSIONS, 'audio/mpeg': 'mp3', 'audio/mp4': 'm4a/mp4' };

/** A file name upstreams accept for the type (they judge the extension, we judged the bytes). */
export const fileNameFor = (type: string, stem: string): string => `${stem}.${EXTENSIONS[type] ?? 'bin'}`;

/** The length of a WAV or MP3 sample in seconds; null when the container does not say cheaply (the provider judges those). */
export function sampleSeconds(bytes: Buffer, type: string): number | null {
  try {
    if (type === 'audio/wav') {
      const wav = parseWavHeader(bytes);
      const frameBytes = (wav.bitsPerSample / 8) * wav.channels;
      return frameBytes > 0 && wav.sampleRate > 0 ? wav.dataLength / frameBytes / wav.sampleRate : null;
    }
    if (type === 'audio/mpeg') return scanMp3Frames(bytes).durationSeconds;
  } catch {
    return null;
  }
  return null;
}

const seconds = (value: number): string => `${Math.round(value * 10) / 10} s`;

/** Refuses a sample the provider would refuse, before anything is uploaded (415, 413 or 400, `param: audio_sample`). */
export function checkSample(provider: string, rules: VoiceSampleRules, bytes: Buffer, type: string): void {
  const param = 'audio_sample';
  if (!rules.types.includes(type)) {
    const accepted = rules.types.map((t) => NAMES[t] ?? t).join(', ');
    throw new DomainError(
      'unsupported_media_type',
      `${provider} clones voices from ${accepted} samples; this one is ${NAMES[type] ?? type}.`,
      { param },
    );
  }
  if (bytes.length > rules.maxBytes) {
    throw new DomainError(
      'file_too_large',
      `${provider} takes samples of at most ${Math.round(rules.maxBytes / 1024 / 1024)} MiB.`,
      { param },
    );
  }
  const length = sampleSeconds(bytes, type);
  if (length === null) return;
  if (rules.minSeconds !== undefined && length < rules.minSeconds) {
    throw new DomainError(
      'invalid_value',
      `${provider} needs a sample of at least ${seconds(rules.minSeconds)}; this one lasts ${seconds(length)}.`,
      { param },
    );
  }
  if (rules.maxSeconds !== undefined && length > rules.maxSeconds) {
    throw new DomainError(
      'invalid_value',
      `${provider} takes samples of at most ${seconds(rules.maxSeconds)}; this one lasts ${seconds(length)}.`,
      { param },
    );
  }
}
