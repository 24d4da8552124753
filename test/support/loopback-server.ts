import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UpstreamClient } from '../../src/providers/http';

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface LoopbackServer {
  url: string;
  /** Answers the client cut off before they were finished. */
  closedEarly: () => number;
  /** Connections opened so far. */
  connections: () => number;
  close: () => Promise<void>;
}

/** A real HTTP server on loopback whose one route is `handler`. */
export async function serve(handler: Handler): Promise<LoopbackServer> {
  let closedEarly = 0;
  let connections = 0;
  const server: Server = createServer((req, res) => {
    res.once('close', () => {
      if (!res.writableFinished) closedEarly++;
    });
    handler(req, res);
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    closedEarly: () => closedEarly,
    connections: () => connections,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Writes `chunk` until the connection closes or `limit` bytes went out, honouring back-pressure. */
export async function pour(res: ServerResponse, chunk: Buffer | string, limit: number): Promise<number> {
  let sent = 0;
  while (!res.destroyed && sent < limit) {
    sent += chunk.length;
    if (!res.write(chunk)) await new Promise((resolve) => (res.once('drain', resolve), res.once('close', resolve)));
  }
  return sent;
}

/** A loopback upstream with `handler`, and the gateway's HTTP executor of it, for `body`; both closed after. */
export async function withServer(
  handler: Handler,
  body: (client: UpstreamClient, server: LoopbackServer) => Promise<void>,
): Promise<void> {
  const server = await serve(handler);
  const client = new UpstreamClient(server.url);
  try {
    await body(client, server);
  } finally {
    await client.close(0);
    await server.close();
  }
}
