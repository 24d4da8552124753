import { encodePcm16le, type PcmAudio } from './pcm';
import type { AudioEncoder } from './encoder';
import { createFlacEncoder, encodeFlac } from './flac';
import { createMp3Encoder } from './mp3';
import { createMulawEncoder, encodeMulaw, mulawWavHeader } from './mulaw';
import { createOpusEncoder, OGG_OPUS_CONTENT_TYPE } from './opus';
import { encodeWav } from './wav';

export type { AudioEncoder } from './encoder';
export { mp3Bitrate } from './mp3';

export type AudioFormat = 'mp3' | 'wav' | 'pcm' | 'flac' | 'opus' | 'pcmu_raw' | 'pcmu_wav' | 'aac';
/** Formats the gateway never encodes: only a step whose upstream makes them can serve them (aac: OpenAI's). */
export type PassThroughFormat = 'aac';
export type EncodableFormat = Exclude<AudioFormat, PassThroughFormat>;
/** WAV (16-bit or µ-law) needs its length in the header before the data, so it is only produced whole. */
export type WholeFormat = 'wav' | 'pcmu_wav';
export type StreamingFormat = Exclude<EncodableFormat, WholeFormat>;

export const PASS_THROUGH_FORMATS: readonly AudioFormat[] = ['aac'];
export const WHOLE_FORMATS: readonly AudioFormat[] = ['wav', 'pcmu_wav'];
export const isStreamingFormat = (format: AudioFormat): format is StreamingFormat =>
  !PASS_THROUGH_FORMATS.includes(format) && !WHOLE_FORMATS.includes(format);

export interface EncodedAudio {
  bytes: Buffer;
  contentType: string;
  /** Bits per second really encoded; set for MP3 only (lossless formats have no target bitrate). */
  bitrate?: number;
}

/** The response Content-Type for a format (decisions §7). */
export function contentTypeFor(format: AudioFormat, sampleRate: number, channels: number): string {
  switch (format) {
    case 'mp3':
      return 'audio/mpeg';
    case 'wav':
      return 'audio/wav';
    case 'flac':
      return 'audio/flac';
    case 'pcm':
      return `audio/L16;rate=${sampleRate};channels=${channels}`;
    case 'opus':
      return OGG_OPUS_CONTENT_TYPE;
    case 'pcmu_raw':
      return `audio/PCMU;rate=${sampleRate};channels=${channels}`;
    case 'pcmu_wav':
      return 'audio/wav';
    case 'aac':
      return 'audio/aac';
  }
}

/** Encodes a whole utterance: `samples` interleaved, exactly `sampleRate` and `channels` end up in the bytes. */
export async function encodeAudio(pcm: PcmAudio, format: AudioFormat, bitrate: number): Promise<EncodedAudio> {
  checkShape(pcm.sampleRate, pcm.channels, pcm.samples.length);
  const contentType = contentTypeFor(format, pcm.sampleRate, pcm.channels);
  switch (format) {
    case 'pcm':
      return { bytes: encodePcm16le(pcm.samples), contentType };
    case 'wav':
      return { bytes: encodeWav(pcm), contentType };
    case 'flac':
      return { bytes: await encodeFlac(pcm.samples, pcm.sampleRate, pcm.channels), contentType };
    case 'mp3': {
      const encoder = await createMp3Encoder(pcm.sampleRate, pcm.channels, bitrate);
      return {
        bytes: Buffer.concat([encoder.push(pcm.samples), encoder.end()]),
        contentType,
        bitrate: encoder.bitrate,
      };
    }
    case 'opus': {
      const encoder = createOpusEncoder(pcm.sampleRate, pcm.channels, bitrate);
      return { bytes: Buffer.concat([encoder.push(pcm.samples), encoder.end()]), contentType };
    }
    case 'pcmu_raw':
      return { bytes: encodeMulaw(pcm.samples), contentType };
    case 'pcmu_wav': {
      const data = encodeMulaw(pcm.samples);
      const pad = Buffer.alloc(data.length % 2);
      return {
        bytes: Buffer.concat([mulawWavHeader(pcm.sampleRate, pcm.channels, data.length), data, pad]),
        contentType,
      };
    }
    case 'aac':
      throw new RangeError(notEncoded('aac'));
  }
}

/** The refusal of a format the gateway only passes through (a programming error: routes check it first). */
export const notEncoded = (format: PassThroughFormat): string =>
  `${format} is never encoded by the gateway: only a step whose upstream makes it can serve it`;

/** An incremental encoder for streaming audio out before the whole text is synthesised. */
export async function createStreamingEncoder(
  format: StreamingFormat,
  options: { sampleRate: number; channels: number; bitrate: number },
): Promise<AudioEncoder> {
  const { sampleRate, channels, bitrate } = options;
  checkShape(sampleRate, channels, 0);
  switch (format) {
    case 'pcm':
      return {
        contentType: contentTypeFor('pcm', sampleRate, channels),
        push(samples: Int16Array): Buffer {
          if (samples.length % channels !== 0) throw new RangeError('interleaved samples must hold whole frames');
          return encodePcm16le(samples);
        },
        end: () => Buffer.alloc(0),
      };
    case 'mp3':
      return createMp3Encoder(sampleRate, channels, bitrate);
    case 'flac':
      return createFlacEncoder(sampleRate, channels);
    case 'opus':
      return createOpusEncoder(sampleRate, channels, bitrate);
    case 'pcmu_raw':
      return createMulawEncoder(sampleRate, channels);
  }
}

function checkShape(sampleRate: number, channels: number, sampleCount: number): void {
  if (!Number.isInteger(sampleRate) || sampleRate <= 0)
    throw new RangeError(`sample rate must be a positive integer, got ${sampleRate}`);
  if (!Number.isInteger(channels) || channels < 1 || channels > 8)
    throw new RangeError(`channels must be 1..8, got ${channels}`);
  if (sampleCount % channels !== 0)
    throw new RangeError(`${sampleCount} interleaved samples is not a whole number of ${channels}-channel frames`);
}
