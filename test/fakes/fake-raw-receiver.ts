import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One answer: its status and the exact bytes of its body. */
export interface RawReply {
  status: number;
  body: Buffer;
}

/**
 * A webhook receiver on 127.0.0.1 that answers each path from a queue of replies with bodies of any
 * bytes (a NUL, UTF-16, binary), then repeats the last one; it records the status of every call.
 */
export class FakeRawReceiver {
  private readonly plans = new Map<string, RawReply[]>();
  private readonly calls: Array<{ path: string; status: number; at: number }> = [];
  private readonly sockets = new Set<Socket>();
  private readonly server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0];
      const queue = this.plans.get(path) ?? [];
      const reply = (queue.length > 1 ? queue.shift() : queue[0]) ?? { status: 200, body: Buffer.from('ok') };
      this.calls.push({ path, status: reply.status, at: Date.now() });
      res.writeHead(reply.status, { 'content-type': 'application/octet-stream' }).end(reply.body);
    });
  });

  static async start(): Promise<FakeRawReceiver> {
    const receiver = new FakeRawReceiver();
    receiver.server.on('connection', (socket) => {
      receiver.sockets.add(socket);
      socket.once('close', () => receiver.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  /** Answers the calls to `path` with `replies` in order, the last one from then on. */
  respond(path: string, replies: RawReply[]): void {
    this.plans.set(path, [...replies]);
  }

  /** The statuses answered to `path`, oldest first. */
  statusesOf(path: string): number[] {
    return this.calls.filter((c) => c.path === path).map((c) => c.status);
  }

  close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    return closed;
  }
}
