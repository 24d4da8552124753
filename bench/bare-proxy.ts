import { once } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { newRequestId } from '../src/common/ids';
import { DEFAULT_UPSTREAM_CONNECTIONS } from '../src/providers/http';

/**
 * The reference the gateway is measured against: the practical limit of a Node proxy. `node:http`
 * in, an undici keep-alive pool out (as many connections as the gateway's), the body passed
 * through as bytes (unparsed), and the four x-svc-* headers added. No auth, logging, parsing or records.
 * `relay`: the answer is written to the client chunk by chunk as the upstream sends it (chunked transfer
 * encoding, no content-length): the bare streaming proxy for `stream: true`, and the chunked-answer
 * variant for a JSON answer (the same kind of answer as the gateway's relayed one).
 */

export interface BareProxy {
  url: string;
  close(): Promise<void>;
}

export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (chunk: Buffer) => parts.push(chunk));
    req.on('end', () => resolve(parts.length === 1 ? parts[0] : Buffer.concat(parts)));
    req.on('error', reject);
  });
}

/** Listens on a free loopback port; resolves with the server's base URL. */
export async function listenOnLoopback(server: Server): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Relays every request to `upstreamOrigin` + the same path, as the named provider. */
export async function startBareProxy(
  upstreamOrigin: string,
  provider = 'primary',
  apiKey = 'x',
  relayChunks = false,
): Promise<BareProxy> {
  const pool = new Pool(upstreamOrigin, { connections: DEFAULT_UPSTREAM_CONNECTIONS });
  const authorization = `Bearer ${apiKey}`;

  const relay = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const requestId = newRequestId();
    try {
      const body = await readBody(req);
      const upstream = await pool.request({
        method: req.method === 'GET' ? 'GET' : 'POST',
        path: req.url ?? '/',
        headers: { 'content-type': req.headers['content-type'] ?? 'application/json', authorization },
        body,
      });
      const headers: Record<string, string | string[]> = {
        'x-svc-request-id': requestId,
        'x-svc-provider-used': provider,
        'x-svc-is-fallback': 'false',
        'x-svc-fallback-level': '0',
      };
      for (const name of relayChunks ? (['content-type'] as const) : (['content-type', 'content-length'] as const)) {
        const value = upstream.headers[name];
        if (value !== undefined) headers[name] = value;
      }
      if (relayChunks) {
        res.writeHead(upstream.statusCode, headers);
        for await (const chunk of upstream.body) if (!res.write(chunk)) await once(res, 'drain');
        res.end();
        return;
      }
      // chat answers are small: one write of head and body is cheaper than stream.pipeline (an AbortController per call)
      const bytes = Buffer.from(await upstream.body.arrayBuffer());
      res.writeHead(upstream.statusCode, headers);
      res.end(bytes);
    } catch (err) {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain', 'x-svc-request-id': requestId });
      res.end(`bare proxy: ${(err as Error).message}`);
    }
  };

  const server = createServer((req, res) => void relay(req, res));
  return {
    url: await listenOnLoopback(server),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await pool.close();
    },
  };
}

/** Forked by bench/chat.ts with the upstream origin (and `relay`) as arguments: sends `{url}`, exits with its parent. */
async function main(): Promise<void> {
  const [origin, mode] = process.argv.slice(2);
  if (!origin || !process.send)
    throw new Error('usage: fork bench/bare-proxy.js <upstream origin> [relay] (with an IPC channel)');
  const proxy = await startBareProxy(new URL(origin).origin, 'primary', 'x', mode === 'relay');
  process.once('disconnect', () => void proxy.close().finally(() => process.exit(0)));
  process.send({ url: proxy.url });
}

if (require.main === module) {
  main().catch((err: Error) => {
    process.stderr.write(`bare proxy failed: ${err.message}\n`);
    process.exit(1);
  });
}
