import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Pool as PgPool } from 'pg';
import { destination, pino } from 'pino';
import { pinoHttp } from 'pino-http';
import { Pool, type Dispatcher } from 'undici';
import { CallAbort } from '../src/common/call-signal';
import { httpLoggerOptions } from '../src/config/logging';
import { validateEnvironment } from '../src/config/env.schema';
import { newRequestId } from '../src/common/ids';
import { bulkCopy, copyRows } from '../src/database/bulk-copy';
import { bulkInsert } from '../src/database/bulk-insert';
import { DEFAULT_UPSTREAM_CONNECTIONS } from '../src/providers/http';
import { SseParser } from '../src/providers/sse';
import { sseChunkFrame, withRawJson } from '../src/common/http/sse-frame';
import { hashSecret } from '../src/keys/key-directory';
import { listenOnLoopback, readBody } from './bare-proxy';

/**
 * A second reference, between the bare proxy and the gateway: the bare proxy plus only the work every
 * request of this gateway must do, written as plainly as Node allows. The key is hashed and looked up,
 * the body parsed and sent on with the step's model, the answer parsed and sent back with `provider`
 * and the x-svc-* headers, the request line is written (asynchronously, to a file) and a usage record
 * is batched to PostgreSQL every 100 ms (one COPY). Each piece is done the cheapest way the gateway knows: the
 * request line is pino-http with the gateway's own options (the few fields it keeps, the credential
 * never logged: pino-http's default serializers copy every header), and an upstream call's timeout is
 * a timer cancelling it through a CallAbort (an `AbortSignal.timeout` per call costs 13 to 18 µs more).
 * No framework, validation, metrics, rate limit, breaker or failover core. What it reaches is about
 * the most any gateway that logs, authenticates and records each request can reach on the machine.
 *
 * Given a failing upstream too, it is the same floor for a request that fails over: each request goes
 * to the failing upstream first (its error body read, a warning logged), then to the answering one, and
 * its failover event is stored before the answer is sent (decisions §8), events of concurrent requests
 * sharing an INSERT (at most two in flight, as the gateway does); the answer carries the alert header.
 *
 * Asked for `stream: true` (without a failing upstream), it is the logged stream proxy: the same per-request
 * work around the bare stream proxy's relay, each event parsed and sent on with `provider` (relayStream).
 */

export const LOGGED_PROXY_SECRET = 'sk-bench-logged-proxy';
const MODEL = 'bench-model';
const FLUSH_MS = 100;
const EVENTS_IN_FLIGHT = 2;

/** The usage rows go in one COPY a tick, as the gateway's on a PostgreSQL server. */
const USAGE = bulkCopy('bench_usage', [
  { name: 'request_id', type: 'text' },
  { name: 'key_id', type: 'text' },
  { name: 'provider', type: 'text' },
  { name: 'model', type: 'text' },
  { name: 'status', type: 'integer' },
  { name: 'latency_ms', type: 'integer' },
  { name: 'attempts', type: 'jsonb' },
]);
const EVENTS = bulkInsert('bench_events', [
  { name: 'id', type: 'text' },
  { name: 'key_id', type: 'text' },
  { name: 'data', type: 'jsonb' },
]);

interface Upstream {
  name: string;
  pool: Pool;
  path: string;
}

const upstreamAt = (name: string, url: string): Upstream => {
  const base = new URL(url);
  return {
    name,
    pool: new Pool(base.origin, { connections: DEFAULT_UPSTREAM_CONNECTIONS }),
    path: `${base.pathname.replace(/\/+$/, '')}/chat/completions`,
  };
};

/** The gateway's default step timeout. */
const TIMEOUT_MS = 30000;

/**
 * One upstream call under a timeout, as the gateway makes it (a timer and a CallAbort): `read` runs on the
 * answer within the time (the whole JSON body; a stream's answer is handed over as soon as it starts).
 */
const call = async <T>(
  upstream: Upstream,
  body: string,
  read: (answer: Dispatcher.ResponseData) => Promise<T> | T,
): Promise<T> => {
  const signal = new CallAbort();
  const timer = setTimeout(() => signal.abort(new Error(`timeout after ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
  try {
    const answer = await upstream.pool.request({
      method: 'POST',
      path: upstream.path,
      headers: { 'content-type': 'application/json', authorization: 'Bearer x' },
      body,
      signal,
    });
    return await read(answer);
  } finally {
    clearTimeout(timer);
  }
};

/** Events awaited by their requests; those arriving while INSERTs are in flight share the next one. */
function groupCommit(db: PgPool): (row: unknown[]) => Promise<void> {
  let pending: Array<{ row: unknown[]; done: (err?: Error) => void }> = [];
  let inFlight = 0;
  const flush = (): void => {
    if (inFlight >= EVENTS_IN_FLIGHT || pending.length === 0) return;
    const batch = pending;
    pending = [];
    inFlight += 1;
    db.query(EVENTS.query(batch.map((p) => p.row)))
      .then(
        () => batch.forEach((p) => p.done()),
        (err: Error) => batch.forEach((p) => p.done(err)),
      )
      .finally(() => {
        inFlight -= 1;
        flush();
      });
  };
  return (row) =>
    new Promise<void>((resolve, reject) => {
      pending.push({ row, done: (err) => (err ? reject(err) : resolve()) });
      if (pending.length === 1) setImmediate(flush);
    });
}

async function main(): Promise<void> {
  const [upstreamUrl, databaseUrl, logFile, failingUrl] = process.argv.slice(2);
  if (!upstreamUrl || !databaseUrl || !logFile || !process.send) {
    throw new Error(
      'usage: fork bench/logged-proxy.js <upstream base URL> <database URL> <log file> [<failing upstream base URL>] (with an IPC channel)',
    );
  }
  const failing = failingUrl ? upstreamAt('primary', failingUrl) : null;
  const serving = upstreamAt(failing ? 'backup' : 'primary', upstreamUrl);
  const db = new PgPool({ connectionString: databaseUrl, max: 3 });
  await db.query(
    `CREATE TABLE IF NOT EXISTS bench_usage (id bigserial PRIMARY KEY, request_id text, key_id text, provider text, model text, status integer, latency_ms integer, attempts jsonb, created_at timestamptz DEFAULT now())`,
  );
  await db.query(
    `CREATE TABLE IF NOT EXISTS bench_events (id text PRIMARY KEY, key_id text, data jsonb, created_at timestamptz DEFAULT now())`,
  );
  const storeEvent = groupCommit(db);
  const logger = pino({ level: 'info' }, destination({ dest: logFile, sync: false, minLength: 8192 }));
  const requestLog = pinoHttp({ ...httpLoggerOptions(validateEnvironment({ LOG_LEVEL: 'info' })), logger });
  const keys = new Map([[hashSecret(LOGGED_PROXY_SECRET), { id: 'bench-key' }]]);
  let records: unknown[][] = [];
  const timer = setInterval(() => {
    if (records.length === 0) return;
    const batch = records;
    records = [];
    copyRows(db, USAGE, batch).catch((err: Error) =>
      process.stderr.write(`logged proxy: usage flush failed: ${err.message}\n`),
    );
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
      const parsed = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      const body = JSON.stringify({ ...parsed, model: MODEL });
      if (parsed.stream === true && !failing) {
        await relayStream(res, body, requestId, key.id, started);
        return;
      }
      const attempts: unknown[] = [];
      if (failing) {
        const reason = await call(
          failing,
          body,
          async (failed) => `http ${failed.statusCode}: ${(await failed.body.text()).slice(0, 200)}`,
        );
        attempts.push({
          provider: failing.name,
          model: MODEL,
          level: 0,
          outcome: reason,
          latency_ms: Date.now() - started,
        });
        logger.warn(`${failing.name} failed for ${requestId} (${reason}); trying the next step`);
      }
      const answer = await call(serving, body, async (a) => ({ statusCode: a.statusCode, text: await a.body.text() }));
      const completion = JSON.parse(answer.text) as Record<string, unknown>;
      const text = JSON.stringify({ ...completion, provider: serving.name });
      const latency = Date.now() - started;
      const level = failing ? 1 : 0;
      const headers: Record<string, string> = {
        'content-type': 'application/json; charset=utf-8',
        'content-length': String(Buffer.byteLength(text)),
        'x-svc-provider-used': serving.name,
        'x-svc-is-fallback': String(level > 0),
        'x-svc-fallback-level': String(level),
      };
      if (failing) {
        const alert = { exhausted_provider: failing.name, active_provider: serving.name, fallback_level: level };
        headers['x-svc-fallback-alert'] = JSON.stringify({
          message: `${failing.name} failed; served by ${serving.name}`,
          ...alert,
        });
        await storeEvent([
          `evt_${randomUUID()}`,
          key.id,
          { proxy_key: key.id, model: MODEL, ...alert, latency_ms: latency, request_id: requestId },
        ]);
      }
      res.writeHead(answer.statusCode, headers);
      res.end(text);
      attempts.push({ provider: serving.name, model: MODEL, level, outcome: 'ok', latency_ms: latency });
      records.push([requestId, key.id, serving.name, MODEL, answer.statusCode, latency, attempts]);
    } catch (err) {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`logged proxy: ${(err as Error).message}`);
    }
  };

  /**
   * A streaming request (the logged stream proxy): the upstream's events passed on as they arrive, each parsed
   * (for its usage and a mid-stream error, as any gateway must) and sent with `provider` appended to its text;
   * one write per upstream read; the usage record batched when the stream ends.
   */
  const relayStream = async (
    res: ServerResponse,
    body: string,
    requestId: string,
    keyId: string,
    started: number,
  ): Promise<void> => {
    const answer = await call(serving, body, (a) => a);
    res.writeHead(answer.statusCode, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-svc-provider-used': serving.name,
      'x-svc-is-fallback': 'false',
      'x-svc-fallback-level': '0',
    });
    const parser = new SseParser();
    let usage: unknown = null;
    for await (const chunk of answer.body) {
      let out = '';
      for (const event of parser.push(chunk as Buffer)) {
        if (event.data === '[DONE]') {
          out += 'data: [DONE]\n\n';
          continue;
        }
        const parsedChunk = JSON.parse(event.data) as Record<string, unknown>;
        if (parsedChunk.error) throw new Error('the upstream stream failed');
        if (parsedChunk.usage) usage = parsedChunk.usage;
        out += sseChunkFrame(withRawJson(parsedChunk, event.data), serving.name);
      }
      if (out) res.write(out);
    }
    res.end();
    const latency = Date.now() - started;
    const attempts = [{ provider: serving.name, model: MODEL, level: 0, outcome: 'ok', latency_ms: latency, usage }];
    records.push([requestId, keyId, serving.name, MODEL, answer.statusCode, latency, attempts]);
  };

  const server = createServer((req, res) => void relay(req, res));
  const url = await listenOnLoopback(server);
  process.once('disconnect', () => {
    clearInterval(timer);
    server.closeAllConnections();
    server.close();
    void Promise.all([serving.pool.close(), failing?.pool.close(), db.end()]).finally(() => process.exit(0));
  });
  process.send({ url });
}

if (require.main === module) {
  main().catch((err: Error) => {
    process.stderr.write(`logged proxy failed: ${err.message}\n`);
    process.exit(1);
  });
}
