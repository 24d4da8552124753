import { loadEsm } from '../../src/common/esm';
import { decodePcm16le } from '../../src/audio/pcm';

/** The part of libflacjs's decoder (the reference libFLAC, built for JavaScript) the tests use. */
interface FlacDecoderApi {
  isReady(): boolean;
  on(event: 'ready', listener: () => void): void;
  create_libflac_decoder(verify: boolean): number;
  init_decoder_stream(
    decoder: number,
    read: (bytes: number) => { buffer: Uint8Array; readDataLength: number; error: boolean },
    write: (channels: Uint8Array[]) => void,
    error: (code: number, description: string) => void,
  ): number;
  FLAC__stream_decoder_process_until_end_of_stream(decoder: number): boolean;
  FLAC__stream_decoder_finish(decoder: number): boolean;
  FLAC__stream_decoder_delete(decoder: number): void;
}

/** FLAC bytes decoded by libFLAC: the interleaved samples, and every error the decoder reported (none for a valid stream). */
export async function decodeFlac(bytes: Buffer, channels: number): Promise<{ samples: Int16Array; errors: string[] }> {
  const { default: flac } = await loadEsm<{ default: FlacDecoderApi }>('libflacjs/dist/libflac.js');
  if (!flac.isReady()) await new Promise<void>((resolve) => flac.on('ready', resolve));
  const decoder = flac.create_libflac_decoder(false);
  let offset = 0;
  const blocks: Int16Array[][] = [];
  const errors: string[] = [];
  flac.init_decoder_stream(
    decoder,
    (wanted) => {
      const chunk = bytes.subarray(offset, offset + wanted);
      offset += chunk.length;
      return { buffer: chunk, readDataLength: chunk.length, error: false };
    },
    (data) => blocks.push(data.map((channel) => decodePcm16le(channel))),
    (_code, description) => errors.push(description),
  );
  flac.FLAC__stream_decoder_process_until_end_of_stream(decoder);
  flac.FLAC__stream_decoder_finish(decoder);
  flac.FLAC__stream_decoder_delete(decoder);
  const frames = blocks.reduce((total, block) => total + block[0].length, 0);
  const samples = new Int16Array(frames * channels);
  let at = 0;
  for (const block of blocks) {
    for (let i = 0; i < block[0].length; i++) for (let c = 0; c < channels; c++) samples[at++] = block[c][i];
  }
  return { samples, errors };
}
