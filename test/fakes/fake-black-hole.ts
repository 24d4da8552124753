import { createServer, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A webhook receiver that accepts the TCP connection, reads the request and never answers (a dead
 * endpoint behind a load balancer). It records the path of each request it swallowed.
 */
export class FakeBlackHole {
  private readonly requests: Array<{ path: string; at: number }> = [];
  private readonly sockets = new Set<Socket>();
  private readonly server = createServer((socket) => {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    let head = '';
    let seen = false;
    socket.on('data', (chunk: Buffer) => {
      if (seen) return;
      head += chunk.toString('latin1');
      const line = /^[A-Z]+ (\S+) HTTP\/1\.[01]\r\n/.exec(head);
      if (!line) return;
      this.requests.push({ path: line[1].split('?')[0], at: Date.now() });
      // one request a connection: the sender never reuses a socket that got no answer
      seen = true;
    });
  });

  static async start(): Promise<FakeBlackHole> {
    const hole = new FakeBlackHole();
    await new Promise<void>((resolve) => hole.server.listen(0, '127.0.0.1', resolve));
    return hole;
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  /** Requests swallowed, to one path or to all. */
  received(path?: string): number {
    return this.requests.filter((r) => path === undefined || r.path === path).length;
  }

  close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    return closed;
  }
}
