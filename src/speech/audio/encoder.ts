/** Incremental encoder: `push` returns the bytes ready so far (maybe none), `end` the rest; all returns concatenated are the file. */
export interface AudioEncoder {
  readonly contentType: string;
  /** Bits per second really encoded (MP3 only: it may differ from the request, see mp3Bitrate). */
  readonly bitrate?: number;
  push(samples: Int16Array): Buffer;
  end(): Buffer;
}
