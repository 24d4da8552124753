import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { ADMIN_TOKEN } from './support/app';
import { CHAT_PATH, chatBody } from './support/failover';
import { spawnService, ServiceProcess } from './support/process';
import { isolatedDatabase } from './support/receiver';
import { StreamClient } from './support/ws-client';

// runs the BUILT service (dist/src/main.js): `npm test` builds first; run `npx nest build` after a change
jest.setTimeout(180000);

/** How long the slow model keeps its requests in flight: they are still waiting when SIGTERM arrives. */
const SLOW_MS = 4000;

interface Answer {
  status: number;
  requestId: string | null;
  fallback: boolean;
  body: string;
}

/** A chat completion with fetch (its own connection), read to the end. */
async function chat(url: string, secret: string, body: Record<string, unknown>): Promise<Answer> {
  const res = await fetch(`${url}${CHAT_PATH}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    requestId: res.headers.get('x-svc-request-id'),
    fallback: res.headers.get('x-svc-is-fallback') === 'true',
    body: await res.text(),
  };
}

/** Resolves when a TCP connection to `port` opens, rejects with its error otherwise. */
function tcpConnect(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', reject);
  });
}

describe('SIGTERM', () => {
  let database: { url: string; drop(): Promise<void> };
  let dir: string;
  let db: Client;
  let failing: FakeOpenAi;
  let upstream: FakeOpenAi;
  let service: ServiceProcess | undefined;

  beforeAll(async () => {
    // a database of its own: the spawned service's job workers must not take other test files' jobs
    database = await isolatedDatabase('shutdown');
    failing = await startFakeOpenAi({ name: 'shd-failing', mode: 'error500' });
    upstream = await startFakeOpenAi({ name: 'shd-upstream' });
    dir = mkdtempSync(join(tmpdir(), 'svc-shutdown-'));
    const yaml = [
      'providers:',
      ...[failing, upstream].map(
        (f) =>
          `  - name: ${f.name}\n    kind: openai\n    base_url: ${f.url}\n    api_key: x\n    capabilities: [chat]`,
      ),
      '  - name: espeak\n    kind: espeak',
    ];
    writeFileSync(join(dir, 'gateway.yaml'), yaml.join('\n'));
    db = new Client({ connectionString: database.url });
    await db.connect();
  });
  afterAll(async () => {
    service?.child.kill('SIGKILL');
    await service?.exited;
    await db?.end();
    await failing?.close();
    await upstream?.close();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('finishes in-flight requests and streams, closes WebSockets with 1001, loses no usage record or failover event, and exits 0', async () => {
    service = spawnService({
      DATABASE_URL: database.url,
      SVC_ADMIN_TOKEN: ADMIN_TOKEN,
      SVC_CONFIG: join(dir, 'gateway.yaml'),
      PORT: '0',
      HOST: '127.0.0.1',
      // the failing provider is tried (and failed over from) on every request, never skipped by its circuit
      SVC_BREAKER_THRESHOLD: '100000',
      // one failover event per request, so each answered failover has its row (coalescing at shutdown: failover-coalescing)
      SVC_FAILOVER_EVENT_WINDOW: '0',
      SVC_SHUTDOWN_GRACE_MS: '30000',
    });
    const [, url] = await service.waitFor(/Gateway listening on (http:\/\/\S+)/, 60000);
    const port = Number(new URL(url).port);
    const createKey = async (
      name: string,
      chain: Array<{ provider: string; model: string }>,
    ): Promise<{ id: string; secret: string }> => {
      const res = await request(url)
        .post('/v1/admin/keys')
        .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
        .send({ name, chain });
      expect(res.status).toBe(201);
      return { id: res.body.id as string, secret: res.body.secret as string };
    };
    const failsOver = await createKey('fails over', [
      { provider: failing.name, model: 'm-fail' },
      { provider: upstream.name, model: 'm-fast' },
    ]);
    const slow = await createKey('slow', [{ provider: upstream.name, model: 'm-slow' }]);
    const slowFailover = await createKey('slow failover', [
      { provider: failing.name, model: 'm-fail' },
      { provider: upstream.name, model: 'm-slow' },
    ]);
    const speaker = await createKey('speaker', [{ provider: 'espeak', model: 'speech-02-hd' }]);

    // answered before the signal: their usage records are still in the batch writer's buffer
    const before = await Promise.all([
      ...Array.from({ length: 8 }, () => chat(url, failsOver.secret, chatBody('m-fail'))),
      ...Array.from({ length: 4 }, () => chat(url, slow.secret, chatBody('m-slow'))),
      ...Array.from({ length: 4 }, () => chat(url, slowFailover.secret, chatBody('m-fail'))),
    ]);
    expect(before.map((a) => a.status)).toEqual(Array(16).fill(200));

    // a speech stream with audio under way
    const stream = await StreamClient.connect(`${url.replace('http', 'ws')}/v1/audio/speech/stream`, {
      Authorization: `Bearer ${speaker.secret}`,
    });
    stream.send({
      event: 'task_start',
      model: 'speech-02-hd',
      voice_setting: { voice_id: 'en-us' },
      audio_setting: { format: 'pcm', sample_rate: 16000 },
    });
    await stream.waitFor((m) => m.event === 'task_started', 60000);
    stream.send({ event: 'task_continue', text: 'The first sentence is spoken now. The second one follows it. ' });
    await stream.waitFor((m) => m.event === 'task_continued', 60000);

    // in flight when the signal arrives: plain, streamed (SSE) and failed-over requests held by the slow model
    upstream.setMode('slowFirstByte', { model: 'm-slow', delayMs: SLOW_MS });
    const slowSent = upstream.count(CHAT_PATH);
    const inFlight = [
      ...Array.from({ length: 3 }, () => chat(url, slow.secret, chatBody('m-slow'))),
      chat(url, slow.secret, chatBody('m-slow', { stream: true })),
      ...Array.from({ length: 3 }, () => chat(url, slowFailover.secret, chatBody('m-fail'))),
    ];
    await upstream.waitUntil(() => upstream.count(CHAT_PATH) === slowSent + 7, 30000);

    service.child.kill('SIGTERM');
    await service.waitFor(/SIGTERM received: draining/, 10000);

    // no new connection is accepted while the in-flight ones finish
    await expect(tcpConnect(port)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    const during = await Promise.all(inFlight);
    expect(during.map((a) => a.status)).toEqual(Array(7).fill(200));
    expect(during[3].body).toMatch(/data: \[DONE\]\s*$/);
    expect(during.filter((a) => a.fallback)).toHaveLength(3);
    expect(await stream.closed).toBe(1001);
    expect(stream.closeReason).toBe('server shutting down');
    expect(await service.exited).toBe(0);
    // the log does not end at "draining": a line says the stop finished
    expect(service.output()).toMatch(/SIGTERM received: draining[\s\S]*\nstopped after \d+ ms: exiting 0\n/);

    const answered = [...before, ...during];
    const requestIds = answered.map((a) => a.requestId);
    expect(requestIds.every((id) => id !== null)).toBe(true);
    const usage = await db.query<{ request_id: string; status: number }>(
      'SELECT request_id, status FROM usage_records WHERE request_id = ANY($1)',
      [requestIds],
    );
    expect(usage.rows.map((r) => r.request_id).sort()).toEqual([...requestIds].sort());
    expect(usage.rows.every((r) => r.status === 200)).toBe(true);
    const failedOver = answered.filter((a) => a.fallback).map((a) => a.requestId);
    expect(failedOver).toHaveLength(8 + 4 + 3);
    const events = await db.query<{ request_id: string }>(
      `SELECT data->>'request_id' AS request_id FROM gateway_events WHERE type = 'failover'`,
    );
    expect(events.rows.map((r) => r.request_id).sort()).toEqual([...failedOver].sort());
    // the sentences the stream spoke have their usage records too
    const spoken = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM usage_records WHERE key_id = $1 AND capability = 'speech' AND status = 200`,
      [speaker.id],
    );
    expect(Number(spoken.rows[0].n)).toBeGreaterThanOrEqual(1);
  });
});
