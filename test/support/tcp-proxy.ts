import { createServer, connect, Server, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of the test PostgreSQL: cutting it drops every open connection
 * and refuses new ones (as a restarting server does), restoring it listens again on the same port.
 * It stands in for a database outage without touching the machine's PostgreSQL.
 */
export class TcpProxy {
  private server: Server | null = null;
  private readonly pairs = new Set<Socket>();
  private port = 0;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** A proxy to the host and port of `databaseUrl`, listening unless `refusing`. */
  static async start(databaseUrl: string, refusing = false): Promise<TcpProxy> {
    const target = new URL(databaseUrl);
    const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.restore();
    if (refusing) await proxy.cut();
    return proxy;
  }

  /** `databaseUrl` with its host and port replaced by the proxy's. */
  urlFor(databaseUrl: string): string {
    const url = new URL(databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String(this.port);
    return url.toString();
  }

  get listening(): boolean {
    return this.server !== null;
  }

  /** Stops listening (new connections are refused) and resets every connection it carries. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.pairs) socket.destroy();
    this.pairs.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Listens again (on the same port once it had one). */
  async restore(): Promise<void> {
    if (this.server) return;
    const server = createServer((client) => this.forward(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  close(): Promise<void> {
    return this.cut();
  }

  private forward(client: Socket): void {
    const upstream = connect(this.targetPort, this.targetHost);
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      this.pairs.add(a);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        this.pairs.delete(a);
        b.destroy();
      });
      a.pipe(b);
    }
  }
}
