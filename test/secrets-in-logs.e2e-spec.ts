import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { projectRoot } from '../src/common/paths';
import { spawnService, ServiceProcess } from './support/process';
import { Receiver } from './support/receiver';
import { refusedUpgrade, StreamClient } from './support/ws-client';

// the built service (`npm test` builds first), logging every request at the most verbose level
jest.setTimeout(120000);

const ADMIN_TOKEN = `adm-${randomBytes(16).toString('hex')}`;
/** Anything shaped like a credential the service issues (a key secret, an endpoint secret). */
const ISSUED_SECRET = /sk-svc-[0-9A-Za-z]{40}|whsec_[0-9A-Za-z]{32}/g;

/** Every `example` / `examples` value in a document. */
function examples(node: unknown, out: unknown[] = []): unknown[] {
  if (Array.isArray(node)) node.forEach((n) => examples(n, out));
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'example' || key === 'examples') out.push(value);
      examples(value, out);
    }
  }
  return out;
}

describe('secrets in logs, errors, lists and the OpenAPI document', () => {
  let service: ServiceProcess;
  let url: string;
  let receiver: Receiver;
  const issued: string[] = [];
  const admin = ['Authorization', `Bearer ${ADMIN_TOKEN}`] as const;

  beforeAll(async () => {
    receiver = await Receiver.start();
    service = spawnService({
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'trace',
      SVC_ADMIN_TOKEN: ADMIN_TOKEN,
      SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
      // a key deleted behind the service's back stays known until the next poll (see the last request)
      SVC_SYNC_INTERVAL_MS: '600000',
      OPENAI_API_KEY: undefined,
      MINIMAX_API_KEY: undefined,
    });
    [, url] = await service.waitFor(/Gateway listening on (http:\/\/\S+)/, 60000);
  });
  afterAll(async () => {
    service.child.kill('SIGKILL');
    await receiver.close();
  });

  it('never writes an issued secret or the admin token to the logs', async () => {
    const http = request(url);
    const created = await http
      .post('/v1/admin/keys')
      .set(...admin)
      .send({ name: 'secrets', chain: [{ provider: 'echo', model: 'echo-1' }] });
    expect(created.status).toBe(201);
    const secret = created.body.secret as string;
    issued.push(secret);
    const auth = ['Authorization', `Bearer ${secret}`] as const;

    const hook = await http
      .post('/v1/user/webhooks')
      .set(...auth)
      .send({ url: receiver.url('/hook') });
    expect(hook.status).toBe(201);
    issued.push(hook.body.secret as string);
    const rotated = await http.post(`/v1/user/webhooks/${hook.body.id as string}/rotate-secret`).set(...auth);
    expect(rotated.status).toBe(200);
    issued.push(rotated.body.secret as string);
    expect((await http.post(`/v1/user/webhooks/${hook.body.id as string}/test`).set(...auth)).body).toMatchObject({
      delivered: true,
    });

    // failing requests that carry the secret in every place a client might put it
    expect(
      (
        await http
          .post('/v1/audio/voice_consents/vc_nope')
          .set(...auth)
          .set('Content-Type', 'application/json')
          .send('{"name":')
      ).status,
    ).toBe(400);
    expect((await http.get('/v1/audio/voice_consents/vc_nope').set(...auth)).status).toBe(404);
    expect((await http.get('/v1/admin/keys').set(...auth)).status).toBe(403);
    expect((await http.get(`/v1/audio/voices?api_key=${secret}`)).status).toBe(401);
    expect((await http.get('/v1/audio/voices').set('x-api-key', secret)).status).toBe(401);
    expect((await http.get('/v1/admin/keys').set('Authorization', `Bearer ${ADMIN_TOKEN}x`)).status).toBe(401);
    expect((await http.get('/v1/audio/voices').set('Authorization', `Bearer ${secret}x`)).status).toBe(401);
    expect(
      (
        await http
          .get('/v1/audio/voices')
          .set('Authorization', `Basic ${Buffer.from(`user:${secret}`).toString('base64')}`)
      ).status,
    ).toBe(401);
    const wsUrl = `${url.replace(/^http/, 'ws')}/v1/audio/speech/stream`;
    const stream = await StreamClient.connect(`${wsUrl}?api_key=${secret}`);
    stream.ws.close();
    await stream.closed;
    expect((await refusedUpgrade(`${wsUrl}?api_key=${secret}x`)).status).toBe(401);
    // every spelling of the parameter that authenticates, on the upgrade and on an unknown route
    for (const name of ['api%5Fkey', 'api%5fkey', '%61pi_key', '%61%70%69%5F%6B%65%79']) {
      const spelled = await StreamClient.connect(`${wsUrl}?${name}=${secret}`);
      spelled.ws.close();
      await spelled.closed;
      const unknown = await http.get(`/v1/nope?${name}=${secret}`);
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.message).toBe('Unknown route: GET /v1/nope.');
    }
    // a browser's single-use ticket on the upgrade, and an unknown WebSocket path with the key in its query
    const ticket = (await http.post('/v1/audio/speech/stream/tickets').set(...auth)).body.ticket as string;
    expect(ticket).toMatch(/^wst_/);
    issued.push(ticket);
    const viaTicket = await StreamClient.connect(`${wsUrl}?ticket=${ticket}`);
    viaTicket.ws.close();
    await viaTicket.closed;
    expect((await refusedUpgrade(`${wsUrl}?ticket=${ticket}`)).status).toBe(401);
    const wrongPath = await refusedUpgrade(`${url.replace(/^http/, 'ws')}/v1/nope?api_key=${secret}`);
    expect(wrongPath.status).toBe(404);
    expect(wrongPath.body).not.toContain(secret);

    // a write that fails while it holds a new endpoint secret: the key was deleted behind the service's back
    const doomed = await http
      .post('/v1/admin/keys')
      .set(...admin)
      .send({ name: 'doomed', chain: [{ provider: 'echo', model: 'echo-1' }] });
    issued.push(doomed.body.secret as string);
    const db = new Client({ connectionString: process.env.DATABASE_URL });
    await db.connect();
    await db.query('DELETE FROM proxy_keys WHERE id = $1', [doomed.body.id]);
    await db.end();
    const failed = await http
      .post('/v1/user/webhooks')
      .set('Authorization', `Bearer ${doomed.body.secret as string}`)
      .send({ url: receiver.url('/doomed') });
    expect(failed.status).toBeGreaterThanOrEqual(400);
    expect(JSON.stringify(failed.body)).not.toMatch(ISSUED_SECRET);

    service.child.kill('SIGTERM');
    await service.exited;
    const logs = service.output();
    // the service did log these requests (so the test reads the right output)
    expect(logs).toContain('/v1/audio/voice_consents/vc_nope');
    expect(logs).toMatch(/"statusCode":403/);
    // the failed write's own line, the likeliest to hold the secret, is in what was read (the last block too)
    expect(logs).toContain(failed.headers['x-svc-request-id']);
    for (const value of [...issued, ADMIN_TOKEN]) expect(logs).not.toContain(value);
    expect(logs.match(ISSUED_SECRET)).toBeNull();
  });

  it('shows no secret in lists, reads or error bodies', async () => {
    // a second service on the same database: the first one is stopped by now
    const again = spawnService({
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      SVC_ADMIN_TOKEN: ADMIN_TOKEN,
      OPENAI_API_KEY: undefined,
      MINIMAX_API_KEY: undefined,
    });
    try {
      const [, base] = await again.waitFor(/Gateway listening on (http:\/\/\S+)/, 60000);
      const http = request(base);
      const keys = await http.get('/v1/admin/keys').set(...admin);
      expect(keys.status).toBe(200);
      const mine = (keys.body.data as Array<{ id: string; name: string }>).find((k) => k.name === 'secrets');
      expect(mine).toBeDefined();
      const single = await http.get(`/v1/admin/keys/${mine?.id ?? ''}`).set(...admin);
      const auth = ['Authorization', `Bearer ${issued[0]}`] as const;
      const hooks = await http.get('/v1/user/webhooks').set(...auth);
      expect(hooks.body.data).toHaveLength(1);
      const hook = await http.get(`/v1/user/webhooks/${hooks.body.data[0].id as string}`).set(...auth);
      const deliveries = await http.get(`/v1/user/webhooks/${hooks.body.data[0].id as string}/deliveries`).set(...auth);
      expect(deliveries.body.data.length).toBeGreaterThan(0);
      for (const res of [keys, single, hooks, hook, deliveries]) {
        expect(res.status).toBe(200);
        const text = JSON.stringify(res.body);
        expect(text).not.toMatch(ISSUED_SECRET);
        for (const value of [...issued, ADMIN_TOKEN]) expect(text).not.toContain(value);
      }
      expect(hook.body).not.toHaveProperty('secret');
      const served = await http.get('/openapi.json');
      expect(served.status).toBe(200);
      const committed = JSON.parse(readFileSync(join(projectRoot(), 'openapi/openapi.json'), 'utf8')) as unknown;
      for (const doc of [served.body as unknown, committed]) {
        const values = JSON.stringify(examples(doc));
        expect(values).not.toMatch(ISSUED_SECRET);
        expect(values).not.toMatch(/adm-[0-9A-Za-z]{16,}/);
      }
    } finally {
      again.child.kill('SIGKILL');
    }
  });
});
