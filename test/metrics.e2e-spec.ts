import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';
import { CHAT_PATH, chatBody, eventually } from './support/failover';
import { isolatedDatabase, Receiver } from './support/receiver';
import { StreamClient } from './support/ws-client';

/** The value of one exact series in a Prometheus text exposition, or undefined when it is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** GET /metrics (admin token) and its text. */
describe('GET /metrics', () => {
  let db: { url: string; drop(): Promise<void> };
  let t: TestApp;
  let primary: FakeOpenAi;
  let backup: FakeOpenAi;
  let receiver: Receiver;
  let secret: string;

  beforeAll(async () => {
    // a database of its own: no other test file's app takes this file's jobs, so every delivery and task is counted here
    db = await isolatedDatabase('metrics');
    primary = await startFakeOpenAi({ name: 'metrics-primary', mode: 'error500' });
    backup = await startFakeOpenAi({ name: 'metrics-backup' });
    receiver = await Receiver.start();
    const yaml = [
      'providers:',
      ...[primary, backup].map((f) => `  - name: ${f.name}\n    kind: openai\n    base_url: ${f.url}\n    api_key: x`),
      '  - name: espeak\n    kind: espeak',
    ].join('\n');
    t = await startApp({
      gateway: parseGatewayConfig(yaml, 'metrics gateway'),
      env: { DATABASE_URL: db.url, SVC_WEBHOOK_ALLOW_PRIVATE: 'true' },
    });
    secret = (
      await t.createKey('metrics', [
        { provider: primary.name, model: 'm-primary' },
        { provider: backup.name, model: 'm-backup' },
        { provider: 'espeak', model: 'speech-02-hd' },
      ])
    ).secret;
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
    await primary?.close();
    await backup?.close();
    await db?.drop();
  });

  const scrape = async (): Promise<string> => {
    const res = await t.http.get('/metrics').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(res.status).toBe(200);
    return res.text;
  };

  it('is behind the admin token: none → 401, a proxy key → 403, the token → Prometheus text', async () => {
    const none = await t.http.get('/metrics');
    expect(none.status).toBe(401);
    expect(none.body).toEqual({
      error: expect.objectContaining({ type: 'authentication_error', code: 'missing_api_key' }),
    });
    const proxyKey = await t.http.get('/metrics').set('Authorization', `Bearer ${secret}`);
    expect(proxyKey.status).toBe(403);
    expect(proxyKey.body.error.code).toBe('admin_token_required');

    const res = await t.http.get('/metrics').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain;.*version=0\.0\.4/);
    expect(res.text).toContain('# TYPE svc_http_requests_total counter');
    expect(res.text).toContain('# TYPE process_cpu_user_seconds_total counter');
  });

  it('counts a failed-over chat request by route, status and provider, with its upstream latencies, failover, breaker state and webhook delivery', async () => {
    const hook = await t.http
      .post('/v1/user/webhooks')
      .set('Authorization', `Bearer ${secret}`)
      .send({ url: receiver.url('/metrics-hook') });
    expect(hook.status).toBe(201);

    const res = await t.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`).send(chatBody('m-primary'));
    expect(res.status).toBe(200);
    expect(res.headers['x-svc-provider-used']).toBe(backup.name);
    const unknown = await t.http.get('/no-such-route');
    expect(unknown.status).toBe(404);
    await receiver.waitFor('/metrics-hook', 1, 20000);

    const text = await eventually(
      scrape,
      (m) => sample(m, 'svc_webhook_deliveries_total{outcome="delivered"}') === 1,
      20000,
      'the delivery counted',
    );

    expect(
      sample(
        text,
        `svc_http_requests_total{method="POST",route="/v1/chat/completions",status="200",provider="${backup.name}"}`,
      ),
    ).toBe(1);
    expect(
      sample(text, 'svc_http_requests_total{method="POST",route="/v1/user/webhooks",status="201",provider="none"}'),
    ).toBe(1);
    expect(sample(text, 'svc_http_requests_total{method="GET",route="unmatched",status="404",provider="none"}')).toBe(
      1,
    );
    expect(
      sample(text, `svc_upstream_request_duration_seconds_count{provider="${primary.name}",outcome="error"}`),
    ).toBe(2); // the 500 and its retry on the same step (decisions §3)
    expect(sample(text, `svc_upstream_request_duration_seconds_count{provider="${backup.name}",outcome="ok"}`)).toBe(1);
    expect(
      sample(text, `svc_upstream_request_duration_seconds_bucket{le="+Inf",provider="${backup.name}",outcome="ok"}`),
    ).toBe(1);
    expect(sample(text, `svc_failovers_total{from="${primary.name}",to="${backup.name}"}`)).toBe(1);
    expect(sample(text, `svc_circuit_state{provider="${primary.name}",state="degraded"}`)).toBe(1);
    expect(sample(text, `svc_circuit_state{provider="${primary.name}",state="healthy"}`)).toBe(0);
    expect(sample(text, `svc_circuit_state{provider="${backup.name}",state="healthy"}`)).toBe(1);
    // each failed attempt is one breaker failure: the 500 and its retry
    expect(sample(text, `svc_circuit_consecutive_failures{provider="${primary.name}"}`)).toBe(2);
    expect(sample(text, 'svc_webhook_deliveries_total{outcome="failed"}')).toBe(0);
    expect(sample(text, 'svc_queue_depth{queue="webhook-deliveries"}')).toBe(0);
  });

  it('reports WebSocket sessions while they are open', async () => {
    expect(sample(await scrape(), 'svc_ws_sessions_open')).toBe(0);
    const client = await StreamClient.connect(`${t.url.replace('http', 'ws')}/v1/audio/speech/stream`, {
      Authorization: `Bearer ${secret}`,
    });
    await client.waitFor((m) => m.event === 'connected_success');

    expect(sample(await scrape(), 'svc_ws_sessions_open')).toBe(1);

    client.ws.close();
    await client.closed;
    await eventually(scrape, (m) => sample(m, 'svc_ws_sessions_open') === 0, 5000, 'the session counted as closed');
  });

  it('times async speech tasks and reports the queue depth', async () => {
    const created = await t.http
      .post('/v1/audio/speech/async')
      .set('Authorization', `Bearer ${secret}`)
      .send({
        model: 'speech-02-hd',
        text: 'A short task for the metrics.',
        voice_setting: { voice_id: 'en-us' },
        audio_setting: { format: 'pcm', sample_rate: 16000 },
      });
    expect(created.status).toBe(202);

    const text = await eventually(
      scrape,
      (m) => sample(m, 'svc_speech_task_duration_seconds_count{outcome="completed"}') === 1,
      60000,
      'the task timed',
    );

    expect(sample(text, 'svc_speech_task_duration_seconds_sum{outcome="completed"}')).toBeGreaterThan(0);
    expect(sample(text, 'svc_queue_depth{queue="speech-tasks"}')).toBe(0);
    expect(
      sample(
        text,
        'svc_http_requests_total{method="POST",route="/v1/audio/speech/async",status="202",provider="none"}',
      ),
    ).toBe(1);
  });
});
