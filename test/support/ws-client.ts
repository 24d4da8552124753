import type { IncomingHttpHeaders } from 'node:http';
import WebSocket from 'ws';

export interface StreamMessage {
  event: string;
  [field: string]: unknown;
}

/** A test client that records every message and the close code. */
export class StreamClient {
  readonly messages: StreamMessage[] = [];
  closeCode: number | null = null;
  closeReason = '';
  /** The headers of the 101 that opened the connection. */
  upgradeHeaders: IncomingHttpHeaders = {};
  readonly closed: Promise<number>;
  private listeners = new Set<() => void>();

  constructor(readonly ws: WebSocket) {
    ws.once('upgrade', (res) => (this.upgradeHeaders = res.headers));
    ws.on('message', (data) => {
      this.messages.push(JSON.parse((data as Buffer).toString('utf8')) as StreamMessage);
      for (const listener of this.listeners) listener();
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => {
        this.closeCode = code;
        this.closeReason = reason.toString();
        for (const listener of this.listeners) listener();
        resolve(code);
      }),
    );
  }

  static async connect(url: string, headers: Record<string, string> = {}): Promise<StreamClient> {
    const ws = new WebSocket(url, { headers });
    const client = new StreamClient(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return client;
  }

  send(message: object): void {
    this.ws.send(JSON.stringify(message));
  }

  /** Resolves with the first recorded message matching, waiting up to `timeoutMs`. */
  waitFor(predicate: (m: StreamMessage) => boolean, timeoutMs = 20000): Promise<StreamMessage> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const found = this.messages.find(predicate);
        if (found) {
          cleanup();
          resolve(found);
        } else if (this.closeCode !== null) {
          cleanup();
          reject(
            new Error(
              `closed (${this.closeCode} ${this.closeReason}) before the message; got ${JSON.stringify(this.messages.map((m) => m.event))}`,
            ),
          );
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out; got ${JSON.stringify(this.messages.map((m) => m.event))}`));
      }, timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        this.listeners.delete(check);
      };
      this.listeners.add(check);
      check();
    });
  }

  /** Every audio byte received, in order. */
  audio(): Buffer {
    return Buffer.concat(
      this.messages
        .filter((m) => m.event === 'task_continued')
        .map((m) => Buffer.from((m.data as { audio: string }).audio, 'hex')),
    );
  }
}

/** The HTTP answer to a refused upgrade. */
export function refusedUpgrade(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; requestId: string | undefined }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          body,
          requestId: res.headers['x-svc-request-id'] as string | undefined,
        }),
      );
    });
    ws.on('open', () => reject(new Error('the upgrade was accepted')));
    ws.on('error', () => undefined);
  });
}
