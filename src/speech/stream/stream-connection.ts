import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WebSocket } from 'ws';
import { DomainError, toDomainError } from '../../common/errors/domain-error';
import type { AuthenticatedKey } from '../../keys/key-directory';
import { SUCCESS, taskFailed } from './stream-replies';

/** The socket's bounds: how long it may sit idle, and how much unread audio a client may leave behind. */
export interface ConnectionLimits {
  idleMs: number;
  /** Socket buffer above which sending waits (backpressure). */
  highWaterBytes: number;
  /** How long a client may leave the buffer full before it is closed. */
  stalledMs: number;
}

/** How a failure closes the socket: a client mistake is 1008, an upstream failure after the task started 1011. */
export type FailCode = 1008 | 1011;

/**
 * One WebSocket connection of the speech stream, below the task it carries: the server messages (each with
 * session_id, trace_id and base_resp, decisions §7), the idle timer, backpressure, the key as it is now, and
 * the close, which cancels whatever the connection's calls are doing (`signal`) and is logged once, as an
 * HTTP request has its request line.
 */
export class StreamConnection {
  private readonly logger = new Logger('SpeechStream');
  private ended = false;
  private idleTimer: NodeJS.Timeout | null = null;
  /** Fires when the connection closes: every upstream call of its task is opened on it. */
  private readonly closing = new AbortController();
  private readonly closeListeners: Array<() => void> = [];
  private readonly openedAt = Date.now();
  /** `task_continue` messages received so far (named on the close line). */
  turns = 0;

  constructor(
    private readonly ws: WebSocket,
    readonly sessionId: string,
    /** The upgrade's `req_` id (on its 101, in this stream's logs, and as `trace_id` on every message). */
    readonly requestId: string,
    /**
     * The stream's key as the key directory knows it now (in memory): looked up on every client message and
     * before every audio message, so a deleted key stops the stream, and a changed chain serves the next task_start.
     */
    private readonly currentKey: () => AuthenticatedKey | null,
    private readonly limits: ConnectionLimits,
  ) {
    ws.on('close', (code: number, reason: Buffer) => this.onClose(code, reason));
    this.send({ event: 'connected_success' });
    this.touch();
  }

  get closed(): boolean {
    return this.ended;
  }

  /** Aborted when the connection closes, from either side. */
  get signal(): AbortSignal {
    return this.closing.signal;
  }

  /** Runs `listener` once the connection is closed (the task's encoder goes back then). */
  onClosed(listener: () => void): void {
    this.closeListeners.push(listener);
  }

  /** Every client frame, while the connection is open; each one re-arms the idle timer. */
  onMessage(listener: (data: Buffer, isBinary: boolean) => void): void {
    this.ws.on('message', (data, isBinary) => {
      // frames that arrive after we closed are dropped (and must not re-arm the idle timer)
      if (this.ended) return;
      this.touch();
      listener(data as Buffer, isBinary);
    });
  }

  /** The key as it is now; a deleted key throws key_revoked (the stream ends with 1008). */
  key(): AuthenticatedKey {
    const key = this.currentKey();
    if (!key) throw this.revoked();
    return key;
  }

  /** key_revoked when the key was deleted meanwhile (that key gets no more audio), else null. */
  keyGone(): DomainError | null {
    return this.currentKey() ? null : this.revoked();
  }

  /** Resolves once the client's buffer has room; a client that stops reading is dropped, not buffered without bound. */
  async writable(): Promise<void> {
    const { highWaterBytes, stalledMs } = this.limits;
    const started = Date.now();
    while (this.ws.bufferedAmount > highWaterBytes && !this.ended) {
      if (Date.now() - started > stalledMs) {
        // a close frame would only queue behind the unread audio: drop the connection and its buffers now
        this.close(1008, 'client is not reading', true);
        throw new DomainError('invalid_value', 'The client stopped reading audio.');
      }
      await sleep(10);
    }
  }

  /** A server message; it counts as activity for the idle timer when it carries audio (`touch`). */
  send(message: { event: string } & Record<string, unknown>, touch = false): void {
    if (touch) this.touch();
    if (this.ws.readyState === this.ws.OPEN)
      this.ws.send(
        JSON.stringify({ ...message, session_id: this.sessionId, trace_id: this.requestId, base_resp: SUCCESS }),
      );
  }

  /** The task failed: `task_failed` with its error, then the close (1011 for a server-side status, else `code`). */
  fail(err: unknown, code: FailCode): void {
    if (this.ended) return;
    const error = toDomainError(err) ?? new DomainError('internal_error', 'The stream failed.');
    if (!(err instanceof DomainError) && error.code === 'internal_error')
      this.logger.error({ err, request_id: this.requestId }, `stream ${this.sessionId} failed`);
    const closeCode = error.status >= 500 ? 1011 : code;
    if (this.ws.readyState === this.ws.OPEN)
      this.ws.send(JSON.stringify(taskFailed(this.sessionId, this.requestId, error)));
    this.close(closeCode, error.code);
  }

  close(code: number, reason: string, terminate = false): void {
    if (this.ended) return;
    this.end();
    if (terminate) this.ws.terminate();
    else this.ws.close(code, reason.slice(0, 120));
  }

  private revoked(): DomainError {
    return new DomainError('key_revoked', 'The API key of this stream was deleted.');
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.closing.abort();
    for (const listener of this.closeListeners) listener();
  }

  private onClose(code: number, reason: Buffer): void {
    this.end();
    this.logger.log(
      {
        request_id: this.requestId,
        session_id: this.sessionId,
        close_code: code,
        close_reason: reason.toString('utf8'),
        turns: this.turns,
        duration_ms: Date.now() - this.openedAt,
      },
      `stream ${this.sessionId} closed (${code})`,
    );
  }

  private touch(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.close(1000, 'idle timeout'), this.limits.idleMs);
    this.idleTimer.unref();
  }
}
