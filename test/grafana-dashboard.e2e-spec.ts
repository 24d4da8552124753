import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';
import { CHAT_PATH, chatBody, eventually } from './support/failover';
import {
  allPanels,
  Dashboard,
  dashboardMetricProblems,
  dashboardQueries,
  dashboardShapeProblems,
  parseExposition,
} from './support/grafana-dashboard';
import { isolatedDatabase, Receiver } from './support/receiver';
import { speak } from './support/speech';

const DASHBOARD_PATH = join(__dirname, '..', 'ops', 'grafana', 'gateway.json');
const readDashboard = (): Dashboard => JSON.parse(readFileSync(DASHBOARD_PATH, 'utf8')) as Dashboard;

/** docs/operations.md "Grafana dashboard": every metric and label the dashboard queries exists on a running service. */
describe('the Grafana dashboard ops/grafana/gateway.json', () => {
  let db: { url: string; drop(): Promise<void> };
  let t: TestApp;
  let primary: FakeOpenAi;
  let backup: FakeOpenAi;
  let receiver: Receiver;
  let metricsText: string;

  beforeAll(async () => {
    // a database of its own: no other test file's app runs this file's async task, so its series exist here
    db = await isolatedDatabase('grafana');
    primary = await startFakeOpenAi({ name: 'grafana-primary', mode: 'error500' });
    backup = await startFakeOpenAi({ name: 'grafana-backup' });
    receiver = await Receiver.start();
    // the backup lists accounts (decisions §7), so the per-account circuit series exist too
    const yaml = [
      'providers:',
      `  - name: ${primary.name}\n    kind: openai\n    base_url: ${primary.url}\n    api_key: x`,
      `  - name: ${backup.name}\n    kind: openai\n    base_url: ${backup.url}`,
      '    accounts:\n      - { name: main, api_key: x }',
      '  - name: espeak\n    kind: espeak',
    ].join('\n');
    t = await startApp({
      gateway: parseGatewayConfig(yaml, 'grafana gateway'),
      env: { DATABASE_URL: db.url, SVC_WEBHOOK_ALLOW_PRIVATE: 'true' },
    });
    const { secret } = await t.createKey('grafana', [
      { provider: primary.name, model: 'm-primary' },
      { provider: backup.name, model: 'm-backup' },
      { provider: 'espeak', model: 'speech-02-hd' },
    ]);
    const auth = `Bearer ${secret}`;

    // traffic that makes every labelled series exist: a failover, a delivery, a sync and an async speech request
    const hook = await t.http
      .post('/v1/user/webhooks')
      .set('Authorization', auth)
      .send({ url: receiver.url('/hook') });
    expect(hook.status).toBe(201);
    const chat = await t.http.post(CHAT_PATH).set('Authorization', auth).send(chatBody('m-primary'));
    expect(chat.status).toBe(200);
    expect(chat.headers['x-svc-provider-used']).toBe(backup.name);
    const speech = await speak(t, secret, {
      model: 'speech-02-hd',
      text: 'A short sentence for the dashboard.',
      voice_setting: { voice_id: 'en-us' },
      audio_setting: { format: 'pcm', sample_rate: 16000 },
    });
    expect(speech.status).toBe(200);
    const task = await t.http
      .post('/v1/audio/speech/async')
      .set('Authorization', auth)
      .send({
        model: 'speech-02-hd',
        text: 'A short task for the dashboard.',
        voice_setting: { voice_id: 'en-us' },
        audio_setting: { format: 'pcm', sample_rate: 16000 },
      });
    expect(task.status).toBe(202);
    await receiver.waitFor('/hook', 1, 20000);

    const scrape = async (): Promise<string> => {
      const res = await t.http.get('/metrics').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
      expect(res.status).toBe(200);
      return res.text;
    };
    metricsText = await eventually(
      scrape,
      (text) =>
        /^svc_speech_task_duration_seconds_count\{outcome="completed"\} [1-9]/m.test(text) &&
        /^svc_webhook_deliveries_total\{outcome="delivered"\} [1-9]/m.test(text),
      60000,
      'the async task and the delivery counted',
    );
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
    await primary?.close();
    await backup?.close();
    await db?.drop();
  });

  it('is a dashboard Grafana imports: title, uid, schema version, a data source variable, unique panel ids, every panel titled, described, with a unit and a query', () => {
    const dashboard = readDashboard();
    expect(dashboardShapeProblems(dashboard)).toEqual([]);
    const panels = allPanels(dashboard);
    expect(panels.filter((p) => p.type === 'row').map((p) => p.title)).toEqual([
      'Traffic',
      'Latency',
      'Failover and circuits',
      'Async work and audio',
      'Webhooks and WebSocket',
      'Process',
    ]);
    // a collapsed row keeps its panels inside it; they are checked too
    expect(panels.length).toBeGreaterThan((dashboard.panels as unknown[]).length);
  });

  it('queries only metrics that a running service declares in /metrics, with labels and label values its series carry', () => {
    const dashboard = readDashboard();
    expect(dashboardMetricProblems(dashboard, metricsText)).toEqual([]);
    // and it shows what operators asked for: requests, failovers, circuits (of providers and of accounts), latency,
    // queues, audio, webhooks, sessions
    const used = new Set(dashboardQueries(dashboard).flatMap((q) => q.expr.match(/\bsvc_[a-z_]+/g) ?? []));
    expect([...used].sort()).toEqual(
      expect.arrayContaining([
        'svc_account_circuit_state',
        'svc_audio_pool_jobs',
        'svc_audio_workers_alive',
        'svc_circuit_consecutive_failures',
        'svc_circuit_state',
        'svc_failovers_total',
        'svc_gateway_events_pending',
        'svc_http_request_duration_seconds_bucket',
        'svc_http_requests_total',
        'svc_queue_depth',
        'svc_upstream_request_duration_seconds_bucket',
        'svc_webhook_deliveries_total',
        'svc_ws_sessions_open',
      ]),
    );
  });

  it('names the panel whose query uses a metric, a label or a series suffix that /metrics does not declare', () => {
    const dashboard = readDashboard();
    const panels = allPanels(dashboard);
    const edit = (title: string, from: string, to: string): void => {
      const panel = panels.find((p) => p.title === title);
      const target = panel?.targets?.[0];
      if (!target || typeof target.expr !== 'string' || !target.expr.includes(from))
        throw new Error(`no "${from}" in panel ${title}`);
      target.expr = target.expr.replace(from, to);
    };
    edit('Failovers by from → to', 'svc_failovers_total', 'svc_failover_total');
    edit('Requests by route and status', 'by (route, status)', 'by (path, status)');
    edit('Queue depth', 'svc_queue_depth', 'svc_queue_depth_count');
    edit('Webhook backlog', 'queue="webhook-deliveries"', 'queue="webhooks"');
    // in the collapsed row
    edit('Resident memory', 'process_resident_memory_bytes', 'process_resident_memory_bytes_bucket');

    expect(dashboardMetricProblems(dashboard, metricsText)).toEqual([
      'panel "Requests by route and status" (A): label "path" (in by (...)) is not on svc_http_requests_total (its series carry method, route, status, provider)',
      'panel "Failovers by from → to" (A): metric svc_failover_total is not in /metrics (no such # TYPE family)',
      'panel "Queue depth" (A): metric svc_queue_depth_count is not in /metrics (no such # TYPE family)',
      'panel "Webhook backlog" (A): no series of svc_queue_depth has queue="webhooks" (values: speech-tasks, webhook-deliveries)',
      'panel "Resident memory" (A): metric process_resident_memory_bytes_bucket is not in /metrics (no such # TYPE family)',
    ]);
  });

  it('reads a histogram series by its family: _bucket, _sum and _count of a histogram, never of a counter', () => {
    const exposition = parseExposition(metricsText);
    expect(exposition.types.get('svc_upstream_request_duration_seconds')).toBe('histogram');
    expect([...(exposition.series.get('svc_upstream_request_duration_seconds_bucket')?.keys() ?? [])]).toEqual(
      expect.arrayContaining(['le', 'provider', 'outcome']),
    );
    const problems = (expr: string): string[] =>
      dashboardMetricProblems({ panels: [{ title: 'p', targets: [{ refId: 'A', expr }] }] }, metricsText);
    expect(
      problems(
        'histogram_quantile(0.9, sum by (le, provider) (rate(svc_upstream_request_duration_seconds_bucket[5m])))',
      ),
    ).toEqual([]);
    expect(problems('sum(rate(svc_http_requests_total_count[5m]))')).toEqual([
      'panel "p" (A): metric svc_http_requests_total_count is not in /metrics (no such # TYPE family)',
    ]);
    expect(problems('sum by (le) (rate(svc_upstream_request_duration_seconds_count[5m]))')).toEqual([
      'panel "p" (A): label "le" (in by (...)) is not on svc_upstream_request_duration_seconds_count (its series carry provider, outcome)',
    ]);
  });
});
