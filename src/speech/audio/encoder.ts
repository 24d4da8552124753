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
