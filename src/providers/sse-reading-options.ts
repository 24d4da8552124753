import { UpstreamFailure } from './provider-adapter';

/** What a stream translator makes of one SSE event: a chunk to hand out, nothing, or the end marker. */
export type StreamStep<T> = T | undefined | 'end';

export interface SseReadingOptions {
  maxLineChars: number;
  /** After the end marker, the rest of the body read at most this far (for the socket's reuse), then dropped. */
  drainLimit: number;
  drainTimeoutMs: number;
  /**
   * A 2xx answered with a JSON body instead of a stream (MiniMax answers its errors so, even when a stream was
   * asked for): read whole up to this many bytes and translated as one event whose data is the whole body, the
   * answer then complete without an end marker. Without it, such a body is parsed as server-sent events.
   */
  wholeJsonCap?: number;
  /** The longest the body may take from its headers, however steadily it trickles (`stream_total_timeout_ms`). */
  totalTimeoutMs?: number;
  /**
   * Whether the chunks so far make a whole answer (a chat chunk with a `finish_reason` came): a body that then ends
   * cleanly without the end marker is complete, not STREAM_TRUNCATED (decisions §3).
   */
  complete?: () => boolean;
}

/** An upstream body that went on past `stream_total_timeout_ms`. */
export const streamTooLong = (ms: number): UpstreamFailure =>
  new UpstreamFailure({
    kind: 'connection',
    code: 'STREAM_TOO_LONG',
    message: `the upstream body ran past its stream_total_timeout_ms (${ms} ms)`,
  });
