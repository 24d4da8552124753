import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { adminQuery, baseDatabaseUrl, withDatabase } from './database';

/** One request the receiver got: the raw body bytes exactly as sent, and the status it answered. */
export interface ReceivedCall {
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  status: number;
  /** Date.now() on arrival. */
  at: number;
}

/**
 * A webhook receiver on 127.0.0.1 that records every call and answers per path from a queue of
 * statuses (then the path's fallback, 200 unless set). It can go down and come back on its port.
 */
export class Receiver {
  readonly calls: ReceivedCall[] = [];
  private readonly plans = new Map<string, { queue: number[]; fallback: number }>();
  private readonly sockets = new Set<Socket>();
  private server: Server | null = null;
  private port = 0;

  static async start(): Promise<Receiver> {
    const receiver = new Receiver();
    await receiver.up();
    return receiver;
  }

  /** `http://127.0.0.1:<port><path>`. */
  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Answers the next calls to `path` with `statuses` in order, then `fallback`. */
  respond(path: string, statuses: number[], fallback = 200): void {
    this.plans.set(path, { queue: [...statuses], fallback });
  }

  callsTo(path: string): ReceivedCall[] {
    return this.calls.filter((c) => c.path === path);
  }

  /** Resolves with the calls to `path` once there are at least `n`. */
  async waitFor(path: string, n: number, timeoutMs = 10000): Promise<ReceivedCall[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.callsTo(path).length < n) {
      if (Date.now() > deadline)
        throw new Error(`${path}: ${this.callsTo(path).length} of ${n} calls within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    return this.callsTo(path);
  }

  /** Listens (again) on the same port when it had one. */
  async up(): Promise<void> {
    const server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (chunk: Buffer) => parts.push(chunk));
      req.on('end', () => {
        const path = (req.url ?? '/').split('?')[0];
        const plan = this.plans.get(path);
        const status = plan?.queue.shift() ?? plan?.fallback ?? 200;
        this.calls.push({ path, headers: req.headers, raw: Buffer.concat(parts), status, at: Date.now() });
        res
          .writeHead(status, { 'content-type': 'text/plain' })
          .end(status < 300 ? 'ok' : `failing on purpose with ${status}`);
      });
    });
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Stops listening and drops every connection: deliveries then see a refused connection. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  close(): Promise<void> {
    return this.down();
  }
}

/**
 * The receiver's side of the webhook signature (decisions §8), written here independently of the service's code: HMAC-SHA256
 * of `<X-SVC-Timestamp>.<raw body>` keyed with the secret, compared in constant time, and a timestamp
 * no more than five minutes from `nowSeconds`.
 */
export function verifyDelivery(
  secret: string,
  headers: IncomingHttpHeaders,
  raw: Buffer,
  nowSeconds = Date.now() / 1000,
): boolean {
  const timestamp = headers['x-svc-timestamp'];
  const signature = headers['x-svc-signature'];
  if (typeof timestamp !== 'string' || !/^\d+$/.test(timestamp) || typeof signature !== 'string') return false;
  if (Math.abs(nowSeconds - Number(timestamp)) > 300) return false;
  const match = /^sha256=([0-9a-f]{64})$/.exec(signature);
  if (!match) return false;
  const expected = createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(Buffer.concat([Buffer.from(`${timestamp}.`, 'utf8'), raw]))
    .digest();
  return timingSafeEqual(Buffer.from(match[1], 'hex'), expected);
}

/**
 * A database of its own for a webhook test file. Every app on a database runs the fan-out and the
 * delivery queue, so on the run's shared database another file's app (private addresses refused,
 * the default retry schedule) could take these tests' deliveries.
 */
export async function isolatedDatabase(label: string): Promise<{ url: string; drop(): Promise<void> }> {
  const base = process.env.SVC_TEST_BASE_DATABASE_URL ?? baseDatabaseUrl();
  const name = `svc_test_${label}_${Date.now()}_${process.pid}`;
  await adminQuery(base, `CREATE DATABASE "${name}"`);
  return {
    url: withDatabase(base, name),
    drop: () => adminQuery(base, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  };
}
