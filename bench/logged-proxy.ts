import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Pool as PgPool } from 'pg';
import { destination, pino } from 'pino';
import { pinoHttp } from 'pino-http';
import { Pool } from 'undici';
import { newRequestId } from '../src/common/ids';
import { bulkInsert } from '../src/database/bulk-insert';
import { DEFAULT_UPSTREAM_CONNECTIONS } from '../src/failover/adapters/http';
import { hashSecret } from '../src/keys/key-directory';
import { listenOnLoopback, readBody } from './bare-proxy';

/**
 * A second reference, between the bare proxy and the gateway: the bare proxy plus only the work every
 * request of this gateway must do, written as plainly as Node allows. The key is hashed and looked up,
 * the body parsed and sent on with the step's model, the answer parsed and sent back with `provider`
 * and the x-svc-* headers, a pino-http line is written (asynchronously, to a file) and a usage record
 * is batched to PostgreSQL every 100 ms. No framework, validation, metrics, rate limit, breaker or
 * failover core. What it reaches is about the most any gateway that logs, authenticates and records
 * each request can reach on the machine.
 */

export const LOGGED_PROXY_SECRET = 'sk-bench-logged-proxy';
const PROVIDER = 'primary';
const MODEL = 'bench-model';
const FLUSH_MS = 100;

const INSERT = bulkInsert('bench_usage', [
  { name: 'request_id', type: 'text' },
  { name: 'key_id', type: 'text' },
  { name: 'provider', type: 'text' },
  { name: 'model', type: 'text' },
  { name: 'status', type: 'integer' },
  { name: 'latency_ms', type: 'integer' },
  { name: 'attempts', type: 'jsonb' },
]);

async function main(): Promise<void> {
  const [upstreamUrl, databaseUrl, logFile] = process.argv.slice(2);
  if (!upstreamUrl || !databaseUrl || !logFile || !process.send) throw new Error('usage: fork bench/logged-proxy.js <upstream base URL> <database URL> <log file> (with an IPC channel)');
  const base = new URL(upstreamUrl);
  const chatPath = `${base.pathname.replace(/\/+$/, '')}/chat/completions`;
  const upstream = new Pool(base.origin, { connections: DEFAULT_UPSTREAM_CONNECTIONS });
  const db = new PgPool({ connectionString: databaseUrl, max: 2 });
  await db.query(
    `CREATE TABLE IF NOT EXISTS bench_usage (id bigserial PRIMARY KEY, request_id text, key_id text, provider text, model text, status integer, latency_ms integer, attempts jsonb, created_at timestamptz DEFAULT now())`,
  );
  const logger = pino({ level: 'info' }, destination({ dest: logFile, sync: false, minLength: 8192 }));
  const requestLog = pinoHttp({ logger, genReqId: (req) => req.id, customAttributeKeys: { reqId: 'request_id' } });
  const keys = new Map([[hashSecret(LOGGED_PROXY_SECRET), { id: 'bench-key' }]]);
  let records: unknown[][] = [];
  const timer = setInterval(() => {
    if (records.length === 0) return;
    const batch = records;
    records = [];
    db.query(INSERT.sql, INSERT.params(batch)).catch((err: Error) => process.stderr.write(`logged proxy: usage flush failed: ${err.message}\n`));
  }, FLUSH_MS);

  const relay = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = Date.now();
    const requestId = newRequestId();
    req.id = requestId;
    res.setHeader('x-svc-request-id', requestId);
    try {
      const raw = await readBody(req);
      requestLog(req, res);
      const token = req.headers.authorization?.startsWith('Bearer ') ? req.headers.authorization.slice(7) : '';
      const key = keys.get(hashSecret(token));
      if (!key) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":"invalid_api_key"}}');
        return;
      }
      const body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      const answer = await upstream.request({
        method: 'POST',
        path: chatPath,
        headers: { 'content-type': 'application/json', authorization: 'Bearer x' },
        body: JSON.stringify({ ...body, model: MODEL }),
        signal: AbortSignal.timeout(30000),
      });
      const completion = JSON.parse(await answer.body.text()) as Record<string, unknown>;
      const text = JSON.stringify({ ...completion, provider: PROVIDER });
      res.writeHead(answer.statusCode, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': String(Buffer.byteLength(text)),
        'x-svc-provider-used': PROVIDER,
        'x-svc-is-fallback': 'false',
        'x-svc-fallback-level': '0',
      });
      res.end(text);
      const latency = Date.now() - started;
      records.push([requestId, key.id, PROVIDER, MODEL, answer.statusCode, latency, [{ provider: PROVIDER, model: MODEL, level: 0, outcome: 'ok', latency_ms: latency }]]);
    } catch (err) {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`logged proxy: ${(err as Error).message}`);
    }
  };

  const server = createServer((req, res) => void relay(req, res));
  const url = await listenOnLoopback(server);
  process.once('disconnect', () => {
    clearInterval(timer);
    server.closeAllConnections();
    server.close();
    void Promise.all([upstream.close(), db.end()]).finally(() => process.exit(0));
  });
  process.send({ url });
}

if (require.main === module) {
  main().catch((err: Error) => {
    process.stderr.write(`logged proxy failed: ${err.message}\n`);
    process.exit(1);
  });
}
