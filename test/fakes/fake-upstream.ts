import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One request the fake received, as the test inspects it. */
export interface RecordedRequest {
  path: string;
  method: string;
  model: string | null;
  stream: boolean;
  headers: IncomingHttpHeaders;
  /** Parsed JSON when the body was JSON, else the raw text ('' for none). */
  body: unknown;
  /** The body's bytes as sent (multipart uploads). */
  raw: Buffer;
  /** True once the connection closed before the fake finished its answer (the client went away). */
  closedEarly: boolean;
  /** When the request arrived (Date.now()): the time of each attempt. */
  at: number;
}

export interface ModeSettings {
  /** Status for the 5xx mode (e.g. 503). */
  status?: number;
  /** Delay before the first byte (`slowFirstByte`). */
  delayMs?: number;
  /** Error message for error modes. */
  message?: string;
  /** The error body's `code` (`null`: none) and `param`, for the modes that send OpenAI's error shape. */
  code?: string | null;
  param?: string | null;
  /** How many times the mode's fault happens in one answer (malformed stream events), or after how many chunks of text it comes (cutAfter, stallAfter). */
  count?: number;
  /** The mode applies to this many requests, then the fake answers `ok` (a fault that happens once). */
  times?: number;
  /** A `Retry-After` header on the mode's error answer (seconds or an HTTP date). */
  retryAfter?: string;
}

export interface ModeOptions extends ModeSettings {
  /** Only requests for this model get the mode. */
  model?: string;
}

/** What a route handler gets: the request, its recording, and the mode that applies to it. */
export interface FakeExchange<Mode extends string> {
  req: IncomingMessage;
  res: ServerResponse;
  record: RecordedRequest;
  mode: Mode;
  settings: ModeSettings;
  /** Resolves true after `ms`, or false as soon as the connection is gone (stop writing then). */
  wait(ms: number): Promise<boolean>;
}

export type FakeHandler<Mode extends string> = (exchange: FakeExchange<Mode>) => void | Promise<void>;

/** The connection-level mode that makes clients see ECONNRESET: every socket is reset on arrival. */
export const REFUSE = 'refuse';

/** A real HTTP server on 127.0.0.1 with switchable failure modes and a request log; shared by the fakes. */
export class FakeUpstream<Mode extends string> {
  readonly requests: RecordedRequest[] = [];
  /** Connections accepted since the last reset (shows keep-alive reuse). */
  connectionsAccepted = 0;
  url = '';
  private defaultMode: { mode: Mode; settings: ModeSettings };
  private readonly modelModes = new Map<string, { mode: Mode; settings: ModeSettings }>();
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;

  constructor(
    initialMode: Mode,
    private readonly handler: FakeHandler<Mode>,
  ) {
    this.defaultMode = { mode: initialMode, settings: {} };
    this.server = createServer((req, res) => void this.receive(req, res));
    this.server.on('connection', (socket) => this.accept(socket));
  }

  async listen(apiPath: string): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => resolve());
    });
    const { port } = this.server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}${apiPath}`;
    return this;
  }

  /** The HTTP server itself (a WebSocket fake of the same host handles its upgrades). */
  get httpServer(): Server {
    return this.server;
  }

  /** The mode for requests without a per-model override. */
  get mode(): Mode {
    return this.defaultMode.mode;
  }

  set mode(mode: Mode) {
    this.setMode(mode);
  }

  /** Switches mode now; with `model`, only for that model's requests. */
  setMode(mode: Mode, options: ModeOptions = {}): void {
    const { model, ...settings } = options;
    if (model !== undefined) {
      this.modelModes.set(model, { mode, settings });
      return;
    }
    this.defaultMode = { mode, settings };
    // idle keep-alive sockets must not keep working once the server "refuses"
    if (mode === REFUSE) for (const socket of this.sockets) socket.resetAndDestroy();
  }

  /** Drops every per-model override. */
  clearModelModes(): void {
    this.modelModes.clear();
  }

  count(path?: string): number {
    return path === undefined ? this.requests.length : this.requests.filter((r) => r.path === path).length;
  }

  /** Clears the request log and the connection counter (modes stay). */
  reset(): void {
    this.requests.length = 0;
    this.connectionsAccepted = 0;
  }

  get openConnections(): number {
    return this.sockets.size;
  }

  /** Polls until `predicate` holds; rejects after `timeoutMs`. */
  async waitUntil(predicate: () => boolean, timeoutMs = 2000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Stops listening and destroys every socket, hanging ones included. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    this.server.closeAllConnections();
    await closed;
  }

  /** Closes the listening socket and every connection: new connections get ECONNREFUSED until `acceptConnections`. */
  async refuseConnections(): Promise<void> {
    if (!this.server.listening) return;
    await this.close();
  }

  /** Listens again on the same port after `refuseConnections`. */
  async acceptConnections(): Promise<void> {
    if (this.server.listening) return;
    const port = Number(new URL(this.url).port);
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
  }

  private accept(socket: Socket): void {
    this.connectionsAccepted++;
    // a counted refusal resets the request, not the connection (the count is per request)
    if (
      this.defaultMode.mode === REFUSE &&
      this.modelModes.size === 0 &&
      this.defaultMode.settings.times === undefined
    ) {
      socket.resetAndDestroy();
      return;
    }
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  private async receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const text = raw.toString('utf8');
    let body: unknown = text;
    try {
      if (text) body = JSON.parse(text);
    } catch {
      // not JSON: keep the raw text
    }
    const fields = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
    const model = typeof fields.model === 'string' ? fields.model : null;
    const record: RecordedRequest = {
      path: (req.url ?? '/').split('?')[0],
      method: req.method ?? 'GET',
      model,
      stream: fields.stream === true,
      headers: req.headers,
      body,
      raw,
      closedEarly: false,
      at: Date.now(),
    };
    this.requests.push(record);
    res.once('close', () => {
      if (!res.writableFinished) record.closedEarly = true;
    });
    const modes = model !== null ? this.modelModes.get(model) : undefined;
    const chosen = modes ?? this.defaultMode;
    let { mode } = chosen;
    const { settings } = chosen;
    // a fault for `times` requests: counted down, then the answer is a good one
    if (settings.times !== undefined) {
      if (settings.times <= 0) mode = 'ok' as Mode;
      else settings.times -= 1;
    }
    if (mode === REFUSE) {
      req.socket.resetAndDestroy();
      return;
    }
    try {
      await this.handler({ req, res, record, mode, settings, wait: (ms) => waitUnlessClosed(res, ms) });
    } catch {
      res.destroy();
    }
  }
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (chunk: Buffer) => parts.push(chunk));
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

function waitUnlessClosed(res: ServerResponse, ms: number): Promise<boolean> {
  if (res.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onClose = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      res.off('close', onClose);
      resolve(!res.destroyed);
    }, ms);
    res.once('close', onClose);
  });
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export type SseSender = (event: string | null, data: string, last?: boolean) => Promise<boolean>;

/**
 * Starts an SSE response; `send` writes one event and reports whether the connection is still
 * there. The last event goes out with the end of the body, in one write, as real servers do.
 */
export function startSse(res: ServerResponse, headers: Record<string, string> = {}): SseSender {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers });
  return (event, data, last = false) =>
    new Promise((resolve) => {
      if (res.destroyed) return resolve(false);
      const text = `${event ? `event: ${event}\n` : ''}data: ${data}\n\n`;
      if (last) res.end(text, () => resolve(true));
      else res.write(text, (err) => resolve(!err));
    });
}

/** Sends `first`, then cuts the connection: a provider dying mid-answer. */
export function writeThenDrop(res: ServerResponse, first: string): void {
  res.write(first, () => res.socket?.destroy());
}

export const wordsOf = (text: string): string[] => text.split(/(?<=\s)/);

/** The text of a request's trailing assistant turn (a prefill the model is to continue), or null when it has none. */
export function prefillOf(body: unknown): string | null {
  const messages = (body as { messages?: Array<{ role?: unknown; content?: unknown }> } | null)?.messages;
  const last = Array.isArray(messages) ? messages[messages.length - 1] : undefined;
  return last?.role === 'assistant' && typeof last.content === 'string' ? last.content : null;
}

/** What an answer that continues `prefill` says of `text`: the rest when `text` goes on from it, else all of it. */
export const continuing = (text: string, prefill: string | null): string =>
  prefill !== null && text.startsWith(prefill) ? text.slice(prefill.length) : text;

/**
 * Where a stream stops for the `cutAfter` / `stallAfter` modes: after `count` chunks of text (default 2) the
 * connection is cut, or left silent until the client goes. Returns false when the stream is to stop at `index`.
 */
export async function passesFault(
  x: { mode: string; settings: ModeSettings; res: ServerResponse; wait(ms: number): Promise<boolean> },
  index: number,
): Promise<boolean> {
  if ((x.mode !== 'cutAfter' && x.mode !== 'stallAfter') || index !== (x.settings.count ?? 2)) return true;
  if (x.mode === 'cutAfter') x.res.socket?.destroy();
  else while (await x.wait(1000));
  return false;
}

/** The parts of a multipart/form-data body (enough for the uploads the gateway sends). */
export function parseMultipart(
  raw: Buffer,
  contentType: string | undefined,
): Map<string, { value: Buffer; filename?: string; contentType?: string }> {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType ?? '');
  const parts = new Map<string, { value: Buffer; filename?: string; contentType?: string }>();
  if (!boundary) return parts;
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  let at = raw.indexOf(delimiter);
  while (at >= 0) {
    const start = at + delimiter.length;
    if (raw.subarray(start, start + 2).toString() === '--') break;
    const next = raw.indexOf(delimiter, start);
    if (next < 0) break;
    const part = raw.subarray(start + 2, next - 2); // after the CRLF that ends the delimiter line, before the CRLF that precedes the next
    const split = part.indexOf('\r\n\r\n');
    const head = part.subarray(0, split).toString('utf8');
    const name = /name="([^"]*)"/.exec(head)?.[1];
    const filename = /filename="([^"]*)"/.exec(head)?.[1];
    const type = /content-type:\s*([^\r\n]+)/i.exec(head)?.[1];
    if (name !== undefined)
      parts.set(name, {
        value: part.subarray(split + 4),
        ...(filename !== undefined ? { filename } : {}),
        ...(type ? { contentType: type } : {}),
      });
    at = next;
  }
  return parts;
}
