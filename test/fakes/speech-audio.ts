import { encodeAudio, type AudioFormat } from '../../src/audio/encoders';
import { parseFlacStreamInfo, parseWavHeader, pcmFrameCount, scanMp3Frames } from '../../src/audio/parse';
import { decodeMulaw } from '../../src/audio/mulaw';
import { oggOpusSeconds, readOggPages } from '../../src/audio/ogg';
import { decodePcm16le, encodePcm16le, float32ToInt16, toChannels } from '../../src/audio/pcm';

/** The pitch every fake upstream speaks in: tests find it again after resampling to prove the rate is right. */
export const TONE_HZ = 440;

/** How long the fakes' "speech" for `text` lasts: long enough for several chunks, short enough for fast tests. */
export const toneSeconds = (text: string): number => Math.min(3, Math.max(0.5, text.length * 0.05));

/** A sine tone as interleaved 16-bit samples. */
export function tone(sampleRate: number, channels: number, seconds: number, frequency = TONE_HZ): Int16Array {
  const mono = new Float32Array(Math.round(sampleRate * seconds));
  for (let i = 0; i < mono.length; i++) mono[i] = 0.3 * Math.sin((2 * Math.PI * frequency * i) / sampleRate);
  return toChannels(float32ToInt16(mono), channels);
}

/** Tones already encoded, by shape and length: the bytes never change, and a benchmark asks for the same few thousands of times. */
const encodedTones = new Map<string, Promise<Buffer>>();
const MAX_ENCODED_TONES = 256;

/** A tone encoded by the project's own encoders, so the bytes parse like a real upstream's (shared: do not modify them). */
export function encodedTone(
  format: AudioFormat,
  shape: { sampleRate: number; channels: number; bitrate: number },
  seconds: number,
): Promise<Buffer> {
  const key = `${format}/${shape.sampleRate}/${shape.channels}/${shape.bitrate}/${seconds}`;
  let bytes = encodedTones.get(key);
  if (!bytes) {
    const audio = {
      samples: tone(shape.sampleRate, shape.channels, seconds),
      sampleRate: shape.sampleRate,
      channels: shape.channels,
    };
    bytes = encodeAudio(audio, format, shape.bitrate).then((encoded) => encoded.bytes);
    void bytes.catch(() => encodedTones.delete(key));
    if (encodedTones.size >= MAX_ENCODED_TONES) encodedTones.clear();
    encodedTones.set(key, bytes);
  }
  return bytes;
}

/** Cuts `bytes` into `count` nearly equal pieces (the split points fall anywhere, as on the wire). */
export function splitBytes(bytes: Buffer, count: number): Buffer[] {
  const size = Math.ceil(bytes.length / count);
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.subarray(at, at + size));
  return out;
}

/** What a test can read back from audio bytes. */
export interface AudioFacts {
  sampleRate: number;
  channels: number;
  /** Duration; null when the container does not say (a streamed FLAC). */
  seconds: number | null;
  /** Pitch of channel 0 from its zero crossings; null for compressed formats. */
  frequency: number | null;
}

/** Parses bytes of `format`; raw PCM carries no header, so its rate and channels come from the Content-Type. */
export function audioFacts(bytes: Buffer, format: AudioFormat, contentType: string): AudioFacts {
  switch (format) {
    case 'mp3': {
      const info = scanMp3Frames(bytes);
      if (!info.uniform || info.trailingBytes !== 0) throw new Error('MP3 frames are not uniform or end mid-frame');
      return {
        sampleRate: info.first.sampleRate,
        channels: info.first.channels,
        seconds: info.durationSeconds,
        frequency: null,
      };
    }
    case 'flac': {
      const info = parseFlacStreamInfo(bytes);
      if (info.bitsPerSample !== 16) throw new Error(`FLAC has ${info.bitsPerSample} bits per sample`);
      return {
        sampleRate: info.sampleRate,
        channels: info.channels,
        seconds: info.totalSamples > 0 ? info.totalSamples / info.sampleRate : null,
        frequency: null,
      };
    }
    case 'wav': {
      const info = parseWavHeader(bytes);
      if (info.formatTag !== 1 || info.bitsPerSample !== 16 || info.dataOffset + info.dataLength !== bytes.length)
        throw new Error('not a whole 16-bit PCM WAV');
      return pcmFacts(bytes.subarray(info.dataOffset), info.sampleRate, info.channels);
    }
    case 'pcm': {
      const match = /^audio\/L16;rate=(\d+);channels=(\d+)$/.exec(contentType);
      if (!match) throw new Error(`raw PCM with Content-Type ${contentType}`);
      return pcmFacts(bytes, Number(match[1]), Number(match[2]));
    }
    case 'pcmu_raw': {
      const match = /^audio\/PCMU;rate=(\d+);channels=(\d+)$/.exec(contentType);
      if (!match) throw new Error(`raw µ-law with Content-Type ${contentType}`);
      return pcmFacts(encodePcm16le(decodeMulaw(bytes)), Number(match[1]), Number(match[2]));
    }
    case 'pcmu_wav': {
      const info = parseWavHeader(bytes);
      if (info.formatTag !== 7 || info.bitsPerSample !== 8) throw new Error('not a µ-law WAV');
      const data = bytes.subarray(info.dataOffset, info.dataOffset + info.dataLength);
      return pcmFacts(encodePcm16le(decodeMulaw(data)), info.sampleRate, info.channels);
    }
    case 'opus': {
      // the rate is OpusHead's input rate (Opus itself always decodes at 48 kHz); decodeOggOpus checks it plays
      const head = readOggPages(bytes)[0].packets[0];
      return { sampleRate: head.readUInt32LE(12), channels: head[9], seconds: oggOpusSeconds(bytes), frequency: null };
    }
    case 'aac':
      throw new Error('aac is not parsed here');
  }
}

function pcmFacts(bytes: Buffer, sampleRate: number, channels: number): AudioFacts {
  const frames = pcmFrameCount(bytes.length, channels);
  const samples = decodePcm16le(bytes);
  // count rising zero crossings of channel 0 away from the edges (resampler ramps live there)
  const from = Math.floor(frames * 0.1);
  const to = Math.floor(frames * 0.9);
  let rising = 0;
  for (let i = from + 1; i < to; i++) if (samples[(i - 1) * channels] < 0 && samples[i * channels] >= 0) rising++;
  return { sampleRate, channels, seconds: frames / sampleRate, frequency: (rising * sampleRate) / (to - from) };
}

/** Every chunk of a stream, joined, and how many there were. */
export async function collectAudio(chunks: AsyncIterable<Buffer>): Promise<{ bytes: Buffer; count: number }> {
  const parts: Buffer[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return { bytes: Buffer.concat(parts), count: parts.length };
}
