import type { IncomingMessage } from 'node:http';
import { type RawData, WebSocket } from 'ws';
import { type CallSignal, traceHeadersOf } from '../common/call-signal';
import { UpstreamFailure } from './provider-adapter';
import type { SocketShares } from './socket-shares';
import { abortFailure, ERROR_BODY_CAP, httpFailure, toUpstreamFailure } from './upstream-errors';
import type { UpstreamSocket, UpstreamSocketCall } from './upstream-executor';

/**
 * The WebSocket transport of the upstream executor (UpstreamClient.socket): one `ws` client socket per call, its
 * faults as UpstreamFailures, its silences bounded, the call's signal obeyed and its messages queued with
 * back-pressure. What goes over it (OpenAI's Realtime protocol) is the adapter's.
 */

/** Messages queued before the socket stops reading (the consumer, a transcoder, keeps up); it reads on at LOW_WATER. */
export const SOCKET_HIGH_WATER = 64;
export const SOCKET_LOW_WATER = 8;

/** `ws(s)://<base_url host><base_url path><path>`: the base URL's http(s) as ws(s), its path's trailing `/` dropped. */
export function socketUrl(baseUrl: string, path: string): string {
  const url = new URL(baseUrl);
  const scheme = url.protocol === 'http:' ? 'ws:' : 'wss:';
  return `${scheme}//${url.host}${url.pathname.replace(/\/+$/, '')}${path}`;
}

/** A message's text, whichever of ws's shapes it came in. */
export function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.from(data).toString('utf8');
}

/** A refused upgrade (401 bad key, 404 unknown model, 429) as the HTTP failure it is, with the upstream's error body. */
function readRefusal(res: IncomingMessage, done: (err: UpstreamFailure) => void): void {
  const parts: Buffer[] = [];
  let size = 0;
  const retryAfter = res.headers['retry-after'];
  const fail = (text: string): void => done(httpFailure(res.statusCode ?? 502, text, retryAfter));
  res.on('data', (chunk: Buffer) => {
    if (size < ERROR_BODY_CAP) parts.push(chunk);
    size += chunk.length;
    if (size >= ERROR_BODY_CAP) res.destroy(); // the message is in the first bytes; the rest is not worth reading
  });
  res.on('error', () => fail(Buffer.concat(parts).subarray(0, ERROR_BODY_CAP).toString('utf8')));
  res.on('end', () => fail(Buffer.concat(parts).subarray(0, ERROR_BODY_CAP).toString('utf8')));
  res.on('close', () => fail(Buffer.concat(parts).subarray(0, ERROR_BODY_CAP).toString('utf8')));
}

const ignore = (): void => undefined;

/**
 * One call's WebSocket (an UpstreamSocket): connects once `start` gives it a socket of its key's share (decisions
 * §11), with the call's headers and its attempt's trace headers (§12); fails with the first of a refused upgrade, a
 * fault, a close by the other side, the idle bound or the signal, cuts the socket then and gives its share back. The
 * idle timer runs from the connect while the consumer has nothing to read: a queue the consumer is behind on (the
 * socket paused at SOCKET_HIGH_WATER among them) is no silence.
 */
export class WsUpstreamSocket implements UpstreamSocket {
  readonly opened: Promise<void>;
  /** Settles (never rejects) once the socket failed or was closed: its share is back by then. */
  readonly ended: Promise<void>;
  private ws: WebSocket | null = null;
  private share: { shares: SocketShares; tenant: string } | null = null;
  private markEnded: () => void = ignore;
  private readonly messages: string[] = [];
  /** Sent before the socket was open: sent on open, in order. */
  private pending: string[] | null = [];
  private failed: UpstreamFailure | null = null;
  private wake: (() => void) | null = null;
  private idle: NodeJS.Timeout | undefined;
  private resolveOpen: () => void = ignore;
  private rejectOpen: (err: UpstreamFailure) => void = ignore;
  private readonly signal: CallSignal;
  /** A cancel fails the socket at once: the messages not read yet are dropped. */
  private readonly onAbort = (): void => {
    this.messages.length = 0;
    this.fail(abortFailure(this.signal.reason));
  };

  constructor(
    private readonly url: string,
    private readonly call: UpstreamSocketCall,
    private readonly idleMs: number,
  ) {
    this.signal = call.signal;
    this.opened = new Promise<void>((resolve, reject) => {
      this.resolveOpen = resolve;
      this.rejectOpen = reject;
    });
    this.opened.catch(ignore); // a consumer that never waits for the open still hears of the failure from `next`
    this.ended = new Promise<void>((resolve) => (this.markEnded = resolve));
    if (call.signal.aborted) {
      this.fail(abortFailure(call.signal.reason));
    }
    // while it waits for a share, a fired signal is SocketShares' to tell (a deadline then is local: `refuse`)
  }

  /** Connects, holding one of `tenant`'s sockets in `shares` until the socket ends (at once if it already did). */
  start(shares: SocketShares, tenant: string): void {
    if (this.failed) return shares.release(tenant);
    this.share = { shares, tenant };
    this.signal.addEventListener('abort', this.onAbort, { once: true });
    const trace = traceHeadersOf(this.signal);
    this.ws = new WebSocket(this.url, {
      headers: trace ? { ...this.call.headers, ...trace } : this.call.headers,
      perMessageDeflate: false,
    });
    this.listen(this.ws, this.call.closedCode ?? 'SOCKET_CLOSED');
    this.armIdle();
  }

  /** Fails a socket that never got a share: its signal fired while it waited (SocketShares' own failure). */
  refuse(failure: UpstreamFailure): void {
    this.fail(failure);
  }

  private listen(ws: WebSocket, closedCode: string): void {
    ws.on('open', () => {
      const pending = this.pending ?? [];
      this.pending = null;
      for (const text of pending) ws.send(text);
      this.resolveOpen();
    });
    ws.on('message', (data) => {
      if (this.failed) return;
      this.messages.push(rawText(data));
      if (this.messages.length >= SOCKET_HIGH_WATER) ws.pause();
      this.armIdle();
      this.notify();
    });
    ws.on('unexpected-response', (_req, res) => readRefusal(res, (err) => this.fail(err)));
    ws.on('error', (err) => this.fail(toUpstreamFailure(err, this.signal)));
    ws.on('close', (code, reason) =>
      this.fail(
        new UpstreamFailure({
          kind: 'connection',
          code: closedCode,
          message: `the upstream socket closed (${code}${reason.length > 0 ? ` ${reason.toString('utf8')}` : ''})`,
        }),
      ),
    );
  }

  send(text: string): void {
    if (this.failed) return;
    if (this.pending) this.pending.push(text);
    else this.ws?.send(text);
  }

  async next(): Promise<string> {
    for (;;) {
      const message = this.messages.shift();
      if (message !== undefined) {
        if (this.messages.length === SOCKET_LOW_WATER && this.ws?.isPaused) this.ws.resume();
        this.armIdle();
        return message;
      }
      if (this.failed) throw this.failed;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  close(): void {
    this.messages.length = 0;
    const closed = new UpstreamFailure({ kind: 'connection', code: 'SOCKET_CLOSED', message: 'closed by the gateway' });
    this.fail(closed, true);
  }

  /** (Re)starts the idle timer while nothing is queued; stops it while the consumer has messages to read. */
  private armIdle(): void {
    clearTimeout(this.idle);
    this.idle = undefined;
    if (this.failed || this.messages.length > 0) return;
    this.idle = setTimeout(
      () =>
        this.fail(
          new UpstreamFailure({
            kind: 'connection',
            code: 'STREAM_IDLE',
            message: `the upstream socket sent nothing within ${this.idleMs} ms`,
          }),
        ),
      this.idleMs,
    );
  }

  /**
   * The first failure is the socket's; the socket is cut (closed cleanly when `clean` and open: the consumer is
   * done) and its waiter woken.
   */
  private fail(err: UpstreamFailure, clean = false): void {
    if (this.failed) return;
    this.failed = err;
    this.pending = null;
    clearTimeout(this.idle);
    this.signal.removeEventListener('abort', this.onAbort);
    this.rejectOpen(err);
    const ws = this.ws;
    if (ws) {
      ws.removeAllListeners('message');
      ws.on('error', ignore); // a cut socket may still report its fault; the failure is already told
      if (clean && ws.readyState === WebSocket.OPEN) {
        ws.close(1000);
        if (ws.isPaused) ws.resume(); // a paused socket would not read the close handshake
      } else if (ws.readyState !== WebSocket.CLOSED) ws.terminate();
    }
    if (this.share) this.share.shares.release(this.share.tenant);
    this.share = null;
    this.markEnded();
    this.notify();
  }

  private notify(): void {
    this.wake?.();
    this.wake = null;
  }
}
