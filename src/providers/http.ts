import { CallAbort, type CallSignal, traceHeadersOf } from '../common/call-signal';
import { Pool } from 'undici';
import type { Dispatcher } from 'undici';
import { CONDUCT_DEFAULTS } from '../config/conduct.dto';
import type { ResolvedProvider } from '../config/gateway-config';
import { UpstreamFailure } from './provider-adapter';
import { SSE_LINE_CAP, SseEvent } from './sse';
import { DEFAULT_KEY_SHARE, SocketShares, tenantOf } from './socket-shares';
import { SseReading, streamTooLong, type StreamStep } from './sse-reading';
import { type SignalledDispatch, TextReading } from './text-reading';
import { ERROR_BODY_CAP, httpFailure, isRecord, toUpstreamFailure } from './upstream-errors';
import type {
  EventReadingOptions,
  UpstreamCall,
  UpstreamExecutor,
  UpstreamSocket,
  UpstreamSocketCall,
} from './upstream-executor';
import { socketUrl, WsUpstreamSocket } from './upstream-socket';

export { SSE_LINE_CAP, SseParser, sseEvents } from './sse';
export type { SseEvent } from './sse';
export { abortFailure, ERROR_BODY_CAP, isRecord, toUpstreamFailure, upstreamErrorMessage } from './upstream-errors';

/** Keep-alive connections per upstream origin (`SVC_UPSTREAM_CONNECTIONS`); a bound so one slow provider cannot exhaust sockets. */
export const DEFAULT_UPSTREAM_CONNECTIONS = 64;
/** After a stream's end marker, the rest of the body is drained so the socket returns to the pool. */
const DRAIN_LIMIT = 64 * 1024;
const DRAIN_TIMEOUT_MS = 2000;
/** A 2xx JSON reply larger than this is refused (read no further, socket dropped): a provider failure. */
export const UPSTREAM_JSON_CAP = 16 * 1024 * 1024;
/** Default longest silence of an upstream body once its headers came (`stream_idle_timeout_ms`, decisions §3). */
export const DEFAULT_STREAM_IDLE_MS = CONDUCT_DEFAULTS.streamIdleTimeoutMs;
/** Default longest a streamed upstream body may take from its headers (`stream_total_timeout_ms`), as OpenAI's SDKs allow a call. */
export const DEFAULT_STREAM_TOTAL_MS = 600000;

export interface UpstreamClientOptions {
  /** Max sockets to the origin (default 64). */
  connections?: number;
  /** The fraction of `connections` one key may hold at once (default 0.5; decisions §11). */
  keyShare?: number;
  /** Longest a streamed body (SSE, audio) may take from its headers, however steadily it trickles (default 10 min). */
  streamTotalTimeoutMs?: number;
  /** Idle keep-alive time; undici's default (4 s, or the server's Keep-Alive hint) when unset. */
  keepAliveTimeoutMs?: number;
  /** Longest wait for the next body bytes once the headers came (default 20 s); a paused (back-pressured) body does not count. */
  streamIdleTimeoutMs?: number;
}

/** The client options a provider's YAML sets (its stream idle timeout), under any given explicitly. */
export function providerClientOptions(
  provider: ResolvedProvider,
  options: UpstreamClientOptions = {},
): UpstreamClientOptions {
  return {
    ...options,
    streamIdleTimeoutMs: options.streamIdleTimeoutMs ?? provider.streamIdleTimeoutMs,
    streamTotalTimeoutMs: options.streamTotalTimeoutMs ?? provider.streamTotalTimeoutMs,
  };
}

export type {
  EventReadingOptions,
  UpstreamCall,
  UpstreamExecutor,
  UpstreamSocket,
  UpstreamSocketCall,
} from './upstream-executor';

export type UpstreamResponse = Dispatcher.ResponseData;
export type UpstreamBody = UpstreamResponse['body'];

export function requireBaseUrl(provider: ResolvedProvider): string {
  if (!provider.baseUrl) throw new Error(`provider '${provider.name}' (${provider.kind}) has no base_url`);
  return provider.baseUrl;
}

/** Reads at most `cap` bytes; a longer body is destroyed (its socket is not worth keeping). */
export async function readCapped(body: AsyncIterable<Buffer>, cap: number): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    parts.push(chunk);
    size += chunk.length;
    if (size >= cap) break;
  }
  return Buffer.concat(parts).subarray(0, cap).toString('utf8');
}

const ignore = (): void => undefined;
/** The body as undici gave it (`check` drains it). */
const bare = (body: UpstreamBody): UpstreamBody => body;

/**
 * A 2xx body (audio) as it arrives (`relay`): a fault mid-way becomes an UpstreamFailure, an early exit closes
 * the upstream socket.
 */
async function* relayBody(body: UpstreamBody, signal: CallSignal): AsyncGenerator<Buffer> {
  let complete = false;
  try {
    for await (const chunk of body) yield chunk as Buffer;
    complete = true;
  } catch (err) {
    throw toUpstreamFailure(err, signal);
  } finally {
    if (!complete) body.on('error', ignore).destroy(); // destroying emits an abort error nobody else listens to
  }
}

export function parseJsonBody(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UpstreamFailure({
      kind: 'provider_error',
      code: 'invalid_response',
      message: 'upstream sent invalid JSON',
    });
  }
  if (!isRecord(parsed))
    throw new UpstreamFailure({
      kind: 'provider_error',
      code: 'invalid_response',
      message: 'upstream sent a non-object JSON',
    });
  return parsed;
}

/** The call's headers, with its attempt's W3C trace headers when traces are on (decisions §12): added here, once, for every adapter. */
function headersOf(call: UpstreamCall): Record<string, string> {
  const trace = traceHeadersOf(call.signal);
  return trace ? { ...call.headers, ...trace } : call.headers;
}

/**
 * A step's own stream_idle_timeout_ms, noted on its signal by the failover core, when it is not the pool's bodyTimeout
 * (`poolMs`) already. An SSE reading (`events`) waits for its first data event under undici's timer too: it gets the
 * longer of the idle and first-token bounds and keeps the idle one itself (SseReading). Left out when it is the
 * pool's: a request's own bodyTimeout cost about 15 % of one-step chat throughput at c=20 (bench:chat-ab).
 */
function idleBound(signal: CallSignal, poolMs: number, events = false): { bodyTimeout?: number } | null {
  if (!(signal instanceof CallAbort)) return null;
  const ms = events ? signal.bodyTimeoutMs : signal.streamIdleMs;
  return ms > 0 && ms !== poolMs ? { bodyTimeout: ms } : null;
}

/** A dispatch handler of this client's own (TextReading, SseReading): it says when it ends. */
type Reading = SignalledDispatch & Dispatcher.DispatchHandler & { onResponseError(controller: null, err: Error): void };

/**
 * The HTTP UpstreamExecutor: one keep-alive pool per provider origin. Every call first takes a socket of its key's
 * share (SocketShares: a call over it, or with every socket taken, waits in the gateway, where the wait is known to
 * be local), and gives it back when its dispatch ends.
 */
export class UpstreamClient implements UpstreamExecutor {
  private readonly pool: Pool;
  private readonly prefix: string;
  /** The base URL as given: its WebSockets' URLs are made from it (`socket`). */
  private readonly baseUrl: string;
  readonly shares: SocketShares;
  /** The WebSockets not ended yet (`close` waits for them, then closes them). */
  private readonly sockets = new Set<WsUpstreamSocket>();
  private readonly streamTotalMs: number;
  /** The pool's bodyTimeout: a call whose step asks for this one passes none of its own. */
  private readonly bodyTimeoutMs: number;

  constructor(baseUrl: string, options: UpstreamClientOptions = {}) {
    const url = new URL(baseUrl);
    this.baseUrl = baseUrl;
    this.prefix = url.pathname.replace(/\/+$/, '');
    const connections = options.connections ?? DEFAULT_UPSTREAM_CONNECTIONS;
    this.shares = SocketShares.of(connections, options.keyShare ?? DEFAULT_KEY_SHARE);
    this.streamTotalMs = options.streamTotalTimeoutMs ?? DEFAULT_STREAM_TOTAL_MS;
    this.bodyTimeoutMs = options.streamIdleTimeoutMs ?? DEFAULT_STREAM_IDLE_MS;
    this.pool = new Pool(url.origin, {
      connections,
      // undici times the gap between body chunks, paused while our side applies back-pressure
      bodyTimeout: this.bodyTimeoutMs,
      ...(options.keepAliveTimeoutMs ? { keepAliveTimeout: options.keepAliveTimeoutMs } : {}),
    });
  }

  /** A 2xx body (audio) as its chunks as they arrive, once its headers came; otherwise what `text` throws. */
  relay(call: UpstreamCall): Promise<AsyncIterable<Buffer>> {
    return this.respond(call, relayBody);
  }

  /**
   * `take` of a 2xx's body (unread; a module function, so no closure per call); throws UpstreamFailure for transport
   * faults and other statuses.
   */
  private async respond<T>(call: UpstreamCall, take: (body: UpstreamBody, signal: CallSignal) => T): Promise<T> {
    const tenant = tenantOf(call.signal);
    if (!this.shares.tryTake(tenant))
      await new Promise<void>((resolve, reject) => this.shares.wait(tenant, call.signal, resolve, reject));
    let response: UpstreamResponse;
    try {
      response = await this.pool.request({
        method: call.method,
        path: this.prefix + call.path,
        headers: headersOf(call),
        body: call.body,
        signal: call.signal,
        ...idleBound(call.signal, this.bodyTimeoutMs),
      });
    } catch (err) {
      this.shares.release(tenant);
      throw toUpstreamFailure(err, call.signal);
    }
    const body = response.body;
    const ok = response.statusCode >= 200 && response.statusCode < 300;
    // the body's whole time is bounded (a 2xx is streamed on by the adapter); its socket is free once it closes
    const ms = this.streamTotalMs;
    const timer = ok ? setTimeout(() => body.destroy(streamTooLong(ms)), ms) : null;
    body.once('close', () => {
      if (timer) clearTimeout(timer);
      this.shares.release(tenant);
    });
    if (ok) return take(body, call.signal);
    const text = await readCapped(response.body, ERROR_BODY_CAP).catch(() => '');
    const retryAfter = response.headers['retry-after'];
    throw httpFailure(response.statusCode, text, Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
  }

  /** A 2xx JSON object of at most `cap` bytes. */
  async json(call: UpstreamCall, cap = UPSTREAM_JSON_CAP): Promise<Record<string, unknown>> {
    return parseJsonBody(await this.text(call, cap));
  }

  /**
   * A 2xx body's whole text, read up to `cap` bytes; otherwise what `relay` throws, and `response_too_large`
   * for a declared or actual length over the cap (the socket is dropped). Through undici's dispatch with a
   * handler of its own: no response stream, no headers object and one promise, where undici's `request` makes a
   * Readable and its events (about a tenth of a proxied chat request's CPU went to undici's request API).
   */
  text(call: UpstreamCall, cap = UPSTREAM_JSON_CAP): Promise<string> {
    return new Promise<string>((resolve, reject) =>
      this.dispatch(call, new TextReading(call.signal, cap, resolve, reject)),
    );
  }

  /**
   * A 2xx server-sent-events answer as its translated chunks, once its headers came; otherwise what `text`
   * throws. Through undici's dispatch with SseReading: each read parsed as it arrives, no response stream
   * (see SseReading for the end marker, faults, the drain and back-pressure). `wholeJsonCap`: a 2xx JSON answer
   * is read whole, up to that many bytes, as one event (MiniMax's errors to a stream request).
   */
  events<T>(
    call: UpstreamCall,
    translate: (event: SseEvent) => StreamStep<T>,
    { maxLineChars = SSE_LINE_CAP, wholeJsonCap, complete }: EventReadingOptions = {},
  ): Promise<AsyncIterableIterator<T>> {
    const options = {
      maxLineChars,
      drainLimit: DRAIN_LIMIT,
      drainTimeoutMs: DRAIN_TIMEOUT_MS,
      wholeJsonCap,
      totalTimeoutMs: this.streamTotalMs,
      complete,
    };
    return new Promise<AsyncIterableIterator<T>>((resolve, reject) =>
      this.dispatch(call, new SseReading<T>(call.signal, translate, options, resolve, reject)),
    );
  }

  /** Sends the call once it holds a socket of its key's share; the handler's end gives the socket back. */
  private dispatch(call: UpstreamCall, handler: Reading): void {
    const tenant = tenantOf(call.signal);
    if (this.shares.tryTake(tenant)) this.send(call, handler, tenant);
    else
      this.shares.wait(
        tenant,
        call.signal,
        () => this.send(call, handler, tenant),
        (failure) => handler.onResponseError(null, failure),
      );
  }

  private send(call: UpstreamCall, handler: Reading, tenant: string): void {
    handler.holdSocket(this.shares, tenant);
    this.pool.dispatch(
      {
        method: call.method,
        path: this.prefix + call.path,
        headers: headersOf(call),
        body: call.body,
        ...idleBound(call.signal, this.bodyTimeoutMs, handler instanceof SseReading),
      },
      handler,
    );
  }

  /**
   * A WebSocket to `call.path` under the base URL (ws:// for http://, wss:// for https://), outside the pool but
   * within its key's share of the pool's sockets: over the share it waits like any call, and connects once it holds
   * one; silent past the call's idle bound, else the step's (on its signal), else the client's. `close` ends it.
   */
  socket(call: UpstreamSocketCall): UpstreamSocket {
    const step = call.signal instanceof CallAbort ? call.signal.streamIdleMs : 0;
    const idleMs = call.idleMs ?? (step > 0 ? step : this.bodyTimeoutMs);
    const socket = new WsUpstreamSocket(socketUrl(this.baseUrl, call.path), call, idleMs);
    this.sockets.add(socket);
    void socket.ended.then(() => this.sockets.delete(socket));
    const tenant = tenantOf(call.signal);
    if (this.shares.tryTake(tenant)) socket.start(this.shares, tenant);
    else
      this.shares.wait(
        tenant,
        call.signal,
        () => socket.start(this.shares, tenant),
        (failure) => socket.refuse(failure),
      );
    return socket;
  }

  /** A 2xx whose body does not matter (probes); the body is drained so the socket is reused. */
  async check(call: UpstreamCall): Promise<void> {
    const body = await this.respond(call, bare);
    try {
      await body.dump({ limit: DRAIN_LIMIT });
    } catch (err) {
      throw toUpstreamFailure(err, call.signal);
    }
  }

  /** Lets in-flight calls and open WebSockets finish for `graceMs`, then cuts them. */
  async close(graceMs = 5000): Promise<void> {
    if (this.pool.destroyed && this.sockets.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<'late'>((resolve) => (timer = setTimeout(resolve, graceMs, 'late')));
    const ended = Promise.all([
      this.pool.destroyed ? undefined : this.pool.close(),
      ...[...this.sockets].map((socket) => socket.ended),
    ]);
    const outcome = await Promise.race([ended.then(() => 'closed' as const), grace]);
    clearTimeout(timer);
    if (outcome === 'closed') return;
    for (const socket of this.sockets) socket.close();
    if (!this.pool.destroyed) await this.pool.destroy();
  }
}

export type { StreamStep } from './sse-reading';
