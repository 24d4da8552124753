import type { CallSignal } from '../common/call-signal';
import type { SseEvent } from './sse';
import type { StreamStep } from './sse-reading-options';

/**
 * What an HTTP adapter asks of its upstream: a call built from the gateway's (method, path under the provider's base
 * URL, headers, body) and the call's signal. The adapter builds these and reads the replies; the executor sends them.
 */
export interface UpstreamCall {
  method: 'GET' | 'POST' | 'DELETE';
  /** Appended to the base URL's path, e.g. `/chat/completions`. */
  path: string;
  headers: Record<string, string>;
  /** JSON text, or bytes (a multipart upload). */
  body?: string | Buffer;
  signal: CallSignal;
}

/**
 * A WebSocket to the provider (`UpstreamExecutor.socket`): the path (with its query) under the base URL, whose
 * http(s) scheme becomes ws(s), the upgrade's headers and the call's signal.
 */
export interface UpstreamSocketCall {
  /** Appended to the base URL's path, query and all, e.g. `/realtime?model=gpt-realtime`. */
  path: string;
  headers: Record<string, string>;
  signal: CallSignal;
  /**
   * Longest silence of the socket while the consumer has nothing to read (connecting included); default: the
   * step's stream idle bound on its signal, else the provider's (`stream_idle_timeout_ms`).
   */
  idleMs?: number;
  /** The code of the connection failure a close by the other side (or a cut) is; default `SOCKET_CLOSED`. */
  closedCode?: string;
}

/**
 * An open or opening WebSocket (`UpstreamExecutor.socket`). Its failures are UpstreamFailures: a refused upgrade
 * is the HTTP status with the upstream's message, a fault or a close by the other side a connection failure
 * (`closedCode`), a silence past the idle bound `STREAM_IDLE`, the signal what its reason says.
 */
export interface UpstreamSocket {
  /** Resolves once the upgrade is accepted; rejects with the socket's failure if it fails first. */
  readonly opened: Promise<void>;
  /** Sends a text message; one sent before the socket is open goes once it is, one after a failure is dropped. */
  send(text: string): void;
  /**
   * The next message's text, in order; once the messages before it are read, the socket's failure (a fired
   * signal's at once, the messages not read yet dropped). The socket
   * stops reading while the consumer is many messages behind, and reads on when it caught up.
   */
  next(): Promise<string>;
  /** Closes the socket (a clean close when open); a `next` after it fails. */
  close(): void;
}

/** How a server-sent-events answer is read (`UpstreamExecutor.events`). */
export interface EventReadingOptions {
  /** The longest line (and event) taken; a longer one fails as `response_too_large`. */
  maxLineChars?: number;
  /** A 2xx JSON answer is read whole, up to this many bytes, as one event (MiniMax's errors to a stream request). */
  wholeJsonCap?: number;
  /** Whether the chunks so far make a whole answer: a clean end without the end marker is then no truncation. */
  complete?: () => boolean;
}

/**
 * The one executor of every HTTP adapter's upstream calls, WebSockets among them. It owns the transport: the
 * connection pool, each key's share of its sockets, the bounds of a body (caps, the stream idle and total
 * timeouts), the call's signal (a timeout, a cancel) and what every fault becomes (an UpstreamFailure: a non-2xx
 * with the upstream's message and Retry-After, a refused or cut connection, a timeout). An adapter only turns a
 * gateway call into an UpstreamCall and the reply into the gateway's shape, so its tests need no server
 * (test/support/scripted-executor.ts); the HTTP implementation is UpstreamClient (http.ts; its WebSockets are
 * upstream-socket.ts), tested once against real servers.
 *
 * Every HTTP operation resolves once a 2xx's headers came and rejects with an UpstreamFailure otherwise; a
 * stream's later faults come out of its iterator, after the chunks before them (a socket's out of its `next`).
 */
export interface UpstreamExecutor {
  /** A 2xx body's whole text, read up to `cap` bytes (over it: `response_too_large`). */
  text(call: UpstreamCall, cap?: number): Promise<string>;
  /** A 2xx JSON object of at most `cap` bytes (anything else: `invalid_response`). */
  json(call: UpstreamCall, cap?: number): Promise<Record<string, unknown>>;
  /**
   * A 2xx server-sent-events answer as what `translate` makes of each event: chunks handed out in order, events it
   * drops skipped, its `'end'` the end of the answer; what it throws fails the stream after the chunks before it.
   * A body that ends without the end marker (unless `complete` says the answer is whole) is STREAM_TRUNCATED.
   */
  events<T>(
    call: UpstreamCall,
    translate: (event: SseEvent) => StreamStep<T>,
    options?: EventReadingOptions,
  ): Promise<AsyncIterableIterator<T>>;
  /** A 2xx body (audio) as its chunks, as they arrive; a fault mid-way fails it, a consumer that leaves closes it. */
  relay(call: UpstreamCall): Promise<AsyncIterable<Buffer>>;
  /** A WebSocket to the provider, connecting at once (see UpstreamSocket). */
  socket(call: UpstreamSocketCall): UpstreamSocket;
  /** A 2xx whose body does not matter (probes, deletes). */
  check(call: UpstreamCall): Promise<void>;
  /** Lets in-flight calls finish for `graceMs`, then cuts them. */
  close(graceMs?: number): Promise<void>;
}
