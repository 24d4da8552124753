import { mulaw } from 'alawmulaw';
import type { AudioEncoder } from './encoder';

/** RIFF/WAVE header for G.711 µ-law: format tag 7 (WAVE_FORMAT_MULAW), 8 bits a sample, with the `fact` chunk it requires. */
export function mulawWavHeader(sampleRate: number, channels: number, dataBytes: number): Buffer {
  const header = Buffer.alloc(58);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(50 + dataBytes + (dataBytes % 2), 4);
  header.write('WAVE', 8, 'latin1');
  header.write('fmt ', 12, 'latin1');
  header.writeUInt32LE(18, 16);
  header.writeUInt16LE(7, 20); // WAVE_FORMAT_MULAW
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(sampleRate, 24);
  header.writeUInt32LE(sampleRate * channels, 28);
  header.writeUInt16LE(channels, 32); // block align: one byte a sample
  header.writeUInt16LE(8, 34);
  header.writeUInt16LE(0, 36); // no extra format bytes
  header.write('fact', 38, 'latin1');
  header.writeUInt32LE(4, 42);
  header.writeUInt32LE(dataBytes / channels, 46); // samples per channel
  header.write('data', 50, 'latin1');
  header.writeUInt32LE(dataBytes, 54);
  return header;
}

/** 16-bit samples to G.711 µ-law bytes (the codec is alawmulaw's). */
export function encodeMulaw(samples: Int16Array): Buffer {
  const bytes = mulaw.encode(samples);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function decodeMulaw(bytes: Uint8Array): Int16Array {
  return mulaw.decode(bytes);
}

/** Raw µ-law (`pcmu_raw`): a byte a sample, no header, so it streams as it is made. */
export function createMulawEncoder(sampleRate: number, channels: number): AudioEncoder {
  return {
    contentType: `audio/PCMU;rate=${sampleRate};channels=${channels}`,
    push(samples: Int16Array): Buffer {
      if (samples.length % channels !== 0) throw new RangeError('interleaved samples must hold whole frames');
      return encodeMulaw(samples);
    },
    end: () => Buffer.alloc(0),
  };
}

/** µ-law WAV (`pcmu_wav`): its header carries the length, so it is only produced whole. */
export function mulawWavSink(sampleRate: number, channels: number): AudioEncoder {
  const parts: Buffer[] = [];
  return {
    contentType: 'audio/wav',
    push: (samples) => (parts.push(encodeMulaw(samples)), Buffer.alloc(0)),
    end: () => {
      const data = Buffer.concat(parts.splice(0));
      const pad = data.length % 2 === 1 ? Buffer.alloc(1) : Buffer.alloc(0); // RIFF chunks are word aligned
      return Buffer.concat([mulawWavHeader(sampleRate, channels, data.length), data, pad]);
    },
  };
}
