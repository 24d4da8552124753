import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';

/** A message of the speech stream, stamped with the moment it arrived (before parsing). */
export interface StreamMessage {
  event: string;
  at: number;
  [field: string]: unknown;
}

interface Waiter {
  event: string;
  resolve(message: StreamMessage): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

/** A benchmark client of `/v1/audio/speech/stream` (test/support is not built into dist, so this is its own). */
export class StreamSession {
  readonly messages: StreamMessage[] = [];
  closeCode: number | null = null;
  readonly closed: Promise<number>;
  private readonly waiters = new Set<Waiter>();

  private constructor(readonly ws: WebSocket) {
    // a socket error is followed by 'close', which is what the waiters hear about
    ws.on('error', () => undefined);
    ws.on('message', (data: Buffer) => {
      const at = performance.now();
      const message = { ...(JSON.parse(data.toString('utf8')) as { event: string }), at };
      this.messages.push(message);
      for (const waiter of this.waiters) if (waiter.event === message.event) this.settle(waiter, message);
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code) => {
        this.closeCode = code;
        for (const waiter of this.waiters) this.settle(waiter, new Error(`closed with ${code} before ${waiter.event}`));
        resolve(code);
      }),
    );
  }

  static open(url: string, headers: Record<string, string>, timeoutMs = 30000): Promise<StreamSession> {
    const ws = new WebSocket(url, { headers, handshakeTimeout: timeoutMs });
    const session = new StreamSession(ws);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(session));
      ws.once('error', reject);
    });
  }

  send(message: object): void {
    this.ws.send(JSON.stringify(message));
  }

  /** The first message of `event`, already received or still to come. */
  until(event: string, timeoutMs = 30000): Promise<StreamMessage> {
    const seen = this.messages.find((m) => m.event === event);
    if (seen) return Promise.resolve(seen);
    if (this.closeCode !== null) return Promise.reject(new Error(`closed with ${this.closeCode} before ${event}`));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        event,
        resolve,
        reject,
        timer: setTimeout(() => this.settle(waiter, new Error(`no ${event} within ${timeoutMs} ms`)), timeoutMs),
      };
      this.waiters.add(waiter);
    });
  }

  /** Closes from the client side and waits for the close to complete. */
  async close(): Promise<void> {
    if (this.closeCode === null) this.ws.close(1000);
    await this.closed;
  }

  private settle(waiter: Waiter, outcome: StreamMessage | Error): void {
    clearTimeout(waiter.timer);
    this.waiters.delete(waiter);
    if (outcome instanceof Error) waiter.reject(outcome);
    else waiter.resolve(outcome);
  }
}
