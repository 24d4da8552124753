import { loadEsm } from '../common/esm';
import type { AudioEncoder } from './encoder';

/** The part of libflacjs (asm.js build, CommonJS) used here. */
interface FlacLibrary {
  isReady(): boolean;
  on(event: 'ready', listener: () => void): void;
  create_libflac_encoder(
    sampleRate: number,
    channels: number,
    bitsPerSample: number,
    compressionLevel: number,
    totalSamples: number,
    verify: boolean,
    blockSize: number,
  ): number;
  init_encoder_stream(
    encoder: number,
    write: (data: Uint8Array, bytes: number, samples: number, frame: number) => void,
    metadata?: (info: FlacMetadata) => void,
  ): number;
  FLAC__stream_encoder_process_interleaved(encoder: number, buffer: Int32Array, samplesPerChannel: number): boolean;
  FLAC__stream_encoder_finish(encoder: number): boolean;
  FLAC__stream_encoder_delete(encoder: number): void;
  FLAC__stream_encoder_get_state(encoder: number): number;
}
interface FlacMetadata {
  min_framesize: number;
  max_framesize: number;
  md5sum: string;
}

/** libFLAC's default level: within a few percent of level 8's size for speech, several times faster. */
const COMPRESSION_LEVEL = 5;

let library: Promise<FlacLibrary> | null = null;
/** Encoders made and not yet deleted: libflac's heap never shrinks, so each one leaked is ~0.8 MB for the process's life. */
let live = 0;

/** How many FLAC encoders hold libflac memory now (tests check that a cut stream leaves none behind). */
export function liveFlacEncoders(): number {
  return live;
}

function loadFlac(): Promise<FlacLibrary> {
  // the asm.js build needs no .wasm/.mem file next to it and reports ready after its runtime starts
  library ??= loadEsm<{ default: FlacLibrary }>('libflacjs/dist/libflac.js').then(
    ({ default: flac }) =>
      new Promise<FlacLibrary>((resolve) => (flac.isReady() ? resolve(flac) : flac.on('ready', () => resolve(flac)))),
  );
  return library;
}

/** Incremental 16-bit FLAC; a live stream's STREAMINFO says 0 samples ("unknown", allowed) since its header is sent first. */
export async function createFlacEncoder(
  sampleRate: number,
  channels: number,
  totalSamples = 0,
): Promise<AudioEncoder & { readonly metadata: FlacMetadata | null }> {
  const flac = await loadFlac();
  const encoder = flac.create_libflac_encoder(sampleRate, channels, 16, COMPRESSION_LEVEL, totalSamples, false, 0);
  if (encoder === 0) throw new Error(`libflac refused ${sampleRate} Hz/${channels} ch`);
  live += 1;
  const remove = (): void => {
    flac.FLAC__stream_encoder_delete(encoder);
    live -= 1;
  };
  const pending: Buffer[] = [];
  let metadata: FlacMetadata | null = null;
  // the callback's view points into the asm.js heap, which the next call overwrites
  const status = flac.init_encoder_stream(
    encoder,
    (data) => pending.push(Buffer.from(data)),
    (info) => (metadata = info),
  );
  if (status !== 0) {
    remove();
    throw new Error(`libflac encoder init failed with status ${status}`);
  }
  const drain = (): Buffer => Buffer.concat(pending.splice(0));
  let finished = false;

  return {
    contentType: 'audio/flac',
    get metadata() {
      return metadata;
    },
    push(samples: Int16Array): Buffer {
      if (finished) throw new Error('FLAC encoder already ended');
      if (samples.length % channels !== 0) throw new RangeError('interleaved samples must hold whole frames');
      if (samples.length === 0) return drain();
      if (
        !flac.FLAC__stream_encoder_process_interleaved(encoder, Int32Array.from(samples), samples.length / channels)
      ) {
        const state = flac.FLAC__stream_encoder_get_state(encoder);
        finished = true;
        remove();
        throw new Error(`libflac encoding failed in state ${state}`);
      }
      return drain();
    },
    end(): Buffer {
      if (finished) return drain();
      finished = true;
      let ok = false;
      try {
        ok = flac.FLAC__stream_encoder_finish(encoder);
      } finally {
        remove();
      }
      if (!ok) throw new Error('libflac could not finish the stream');
      return drain();
    },
  };
}

/** A whole FLAC file, its STREAMINFO completed with the MD5 and frame sizes libFLAC reports at the end. */
export async function encodeFlac(samples: Int16Array, sampleRate: number, channels: number): Promise<Buffer> {
  const encoder = await createFlacEncoder(sampleRate, channels, samples.length / channels);
  const bytes = Buffer.concat([encoder.push(samples), encoder.end()]);
  const info = encoder.metadata;
  // a stream encoder cannot seek back, so libFLAC left these STREAMINFO fields zero in the header
  if (info && bytes.toString('latin1', 0, 4) === 'fLaC') {
    bytes.writeUIntBE(info.min_framesize, 12, 3);
    bytes.writeUIntBE(info.max_framesize, 15, 3);
    Buffer.from(info.md5sum, 'hex').copy(bytes, 26);
  }
  return bytes;
}
