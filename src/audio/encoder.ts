import type { CallSignal } from '../common/call-signal';
/** Incremental encoder: `push` returns the bytes ready so far (maybe none), `end` the rest; all returns concatenated are the file. */
export interface AudioEncoder {
  readonly contentType: string;
  /** Bits per second really encoded (MP3 only: it may differ from the request, see mp3Bitrate). */
  readonly bitrate?: number;
  push(samples: Int16Array): Buffer;
  end(): Buffer;
}

/** Ends an encoder whose stream was cut short, its bytes unwanted: libflac's memory is returned only when its encoder ends. */
export function releaseEncoder(encoder: Pick<AudioEncoder, 'end'>): void {
  try {
    encoder.end();
  } catch {
    // nobody is left to tell
  }
}

/**
 * The encoder's bytes as each block of samples is pushed, then its tail. Stopped early (the source failed,
 * the consumer stopped reading, `signal` aborted: no tail then, nobody wants it), the encoder is still released.
 */
export async function* encodeAll(
  encoder: AudioEncoder,
  samples: AsyncIterable<Int16Array>,
  signal?: CallSignal,
): AsyncGenerator<Buffer> {
  let ended = false;
  try {
    for await (const block of samples) {
      if (signal?.aborted) return;
      const bytes = encoder.push(block);
      if (bytes.length > 0) yield bytes;
    }
    if (signal?.aborted) return;
    ended = true;
    const tail = encoder.end();
    if (tail.length > 0) yield tail;
  } finally {
    if (!ended) releaseEncoder(encoder);
  }
}
