import { loadEsm } from '../common/esm';
import { readMp3FrameHeader } from './parse';
import type { AudioEncoder } from './encoder';

/** The part of the ESM-only `@breezystack/lamejs` package used here. */
interface LameModule {
  Mp3Encoder: new (channels: number, sampleRate: number, kbps: number) => LameEncoder;
}
interface LameEncoder {
  encodeBuffer(left: Int16Array, right?: Int16Array): Int8Array;
  flush(): Int8Array;
}

/** Measured on lamejs 1.2.7: below `mono`/`stereo` kbps it silently resamples (no way to pin the rate); `max` is the MPEG-2/2.5 cap. */
const MP3_KBPS_LIMITS: Record<number, { mono: number; stereo: number; max: number }> = {
  8000: { mono: 8, stereo: 8, max: 64 },
  16000: { mono: 16, stereo: 32, max: 160 },
  22050: { mono: 32, stereo: 48, max: 160 },
  24000: { mono: 40, stereo: 56, max: 160 },
  32000: { mono: 48, stereo: 80, max: 320 },
  44100: { mono: 64, stereo: 112, max: 320 },
};

/** Bitrate decision: clamp the request to what this rate carries without lamejs changing the rate, and report the real one. */
export function mp3Bitrate(sampleRate: number, channels: number, requested: number): number {
  const limits = MP3_KBPS_LIMITS[sampleRate];
  if (!limits)
    throw new RangeError(
      `MP3 sample rate ${sampleRate} is not supported (one of ${Object.keys(MP3_KBPS_LIMITS).join(', ')})`,
    );
  if (channels !== 1 && channels !== 2) throw new RangeError(`MP3 carries 1 or 2 channels, got ${channels}`);
  const floor = channels === 1 ? limits.mono : limits.stereo;
  const kbps = Math.min(limits.max, Math.max(floor, Math.round(requested / 1000)));
  return kbps * 1000;
}

let lame: Promise<LameModule> | null = null;

/** Incremental MP3 (CBR, no bit reservoir so frames stand alone): bytes come out as whole frames fill. */
export async function createMp3Encoder(
  sampleRate: number,
  channels: number,
  requestedBitrate: number,
): Promise<AudioEncoder> {
  const bitrate = mp3Bitrate(sampleRate, channels, requestedBitrate);
  lame ??= loadEsm<LameModule>('@breezystack/lamejs');
  const { Mp3Encoder } = await lame;
  const encoder = new Mp3Encoder(channels, sampleRate, bitrate / 1000);
  let checked = false;

  // guards against a lamejs upgrade changing its rate choice: never ship a different rate than asked
  const verify = (bytes: Buffer): Buffer => {
    if (checked || bytes.length === 0) return bytes;
    const frame = readMp3FrameHeader(bytes, 0);
    if (!frame || frame.sampleRate !== sampleRate || frame.channels !== channels || frame.bitrate !== bitrate) {
      throw new Error(
        `lamejs produced ${frame ? `${frame.sampleRate} Hz/${frame.channels} ch/${frame.bitrate} bps` : 'no frame header'}, ` +
          `expected ${sampleRate} Hz/${channels} ch/${bitrate} bps`,
      );
    }
    checked = true;
    return bytes;
  };

  return {
    contentType: 'audio/mpeg',
    bitrate,
    push(samples: Int16Array): Buffer {
      if (samples.length % channels !== 0) throw new RangeError('interleaved samples must hold whole frames');
      if (samples.length === 0) return Buffer.alloc(0);
      if (channels === 1) return verify(toBuffer(encoder.encodeBuffer(samples)));
      const left = new Int16Array(samples.length / 2);
      const right = new Int16Array(samples.length / 2);
      for (let i = 0, j = 0; j < left.length; i += 2, j++) {
        left[j] = samples[i];
        right[j] = samples[i + 1];
      }
      return verify(toBuffer(encoder.encodeBuffer(left, right)));
    },
    end(): Buffer {
      return verify(toBuffer(encoder.flush()));
    },
  };
}

function toBuffer(bytes: Int8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
