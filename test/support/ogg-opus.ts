import { loadEsm } from '../../src/common/esm';
import { readOggPages } from '../../src/audio/ogg';

/** The part of the ESM-only `ogg-opus-decoder` (an independent Ogg demuxer and libopus build) the tests use. */
interface OggOpusDecoderModule {
  OggOpusDecoder: new () => {
    ready: Promise<void>;
    decodeFile(
      data: Uint8Array,
    ): Promise<{ channelData: Float32Array[]; samplesDecoded: number; sampleRate: number; errors: unknown[] }>;
    free(): void;
  };
}

/** What an Ogg Opus file says of itself, and what an independent decoder makes of it. */
export interface DecodedOpus {
  channels: number;
  /** OpusHead's input sample rate (informational: Opus always decodes at 48 kHz). */
  inputSampleRate: number;
  /** Seconds the decoder played (the pre-skip and the end trimming applied). */
  seconds: number;
  /** Every page's CRC matched. */
  crcOk: boolean;
  errors: number;
  /** Channel 0 as decoded, at 48 kHz. */
  samples: Float32Array;
}

export async function decodeOggOpus(bytes: Buffer): Promise<DecodedOpus> {
  if (bytes.toString('latin1', 0, 4) !== 'OggS') throw new Error('not an Ogg stream');
  const pages = readOggPages(bytes);
  const head = pages[0].packets[0];
  if (head.toString('latin1', 0, 8) !== 'OpusHead') throw new Error('the first packet is not OpusHead');
  const { OggOpusDecoder } = await loadEsm<OggOpusDecoderModule>('ogg-opus-decoder');
  const decoder = new OggOpusDecoder();
  await decoder.ready;
  try {
    const decoded = await decoder.decodeFile(bytes);
    return {
      channels: head[9],
      inputSampleRate: head.readUInt32LE(12),
      seconds: decoded.samplesDecoded / decoded.sampleRate,
      crcOk: pages.every((page) => page.crcOk),
      errors: decoded.errors.length,
      samples: decoded.channelData[0],
    };
  } finally {
    decoder.free();
  }
}

/** Pitch of a decoded tone from its rising zero crossings (away from the edges). */
export function pitchOf(samples: Float32Array, sampleRate: number): number {
  const from = Math.floor(samples.length * 0.1);
  const to = Math.floor(samples.length * 0.9);
  let rising = 0;
  for (let i = from + 1; i < to; i++) if (samples[i - 1] < 0 && samples[i] >= 0) rising++;
  return (rising * sampleRate) / (to - from);
}
