import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { CircuitRegistry } from '../src/failover/circuit-registry';
import { UsageWriter } from '../src/usage/usage.writer';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { FakeUpstream, sendJson } from './fakes/fake-upstream';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';
import { eventually, sleep, storedEvents } from './support/failover';
import { LogCapture } from './support/log-capture';

const KEYS = {
  alpha: `sk-acct-alpha-${randomBytes(12).toString('hex')}`,
  beta: `sk-acct-beta-${randomBytes(12).toString('hex')}`,
};
const BACKUP_KEY = `sk-backup-${randomBytes(12).toString('hex')}`;
const QUEUE_TIMEOUT_MS = 300;
const COOLDOWN_MS = 1500;
const messages = [{ role: 'user' as const, content: 'Say hello.' }];

/** An OpenAI-compatible upstream that knows each account's key: its calls in flight, the most at once, its faults. */
class AccountsUpstream {
  readonly inFlight = new Map<string, number>();
  readonly mostInFlight = new Map<string, number>();
  /** The account of each chat call, in arrival order. */
  readonly seen: string[] = [];
  readonly failing = new Set<string>();
  holdMs = 0;
  readonly fake = new FakeUpstream<'ok'>('ok', async (x) => {
    if (x.record.method === 'GET') return sendJson(x.res, 200, { object: 'list', data: [] });
    const bearer = (x.req.headers.authorization ?? '').replace(/^Bearer /, '');
    const account = Object.entries(KEYS).find(([, key]) => key === bearer)?.[0] ?? `unknown`;
    this.seen.push(account);
    const now = (this.inFlight.get(account) ?? 0) + 1;
    this.inFlight.set(account, now);
    this.mostInFlight.set(account, Math.max(now, this.mostInFlight.get(account) ?? 0));
    try {
      if (this.holdMs > 0 && !(await x.wait(this.holdMs))) return;
      if (this.failing.has(account))
        return sendJson(x.res, 500, { error: { message: 'account broke', type: 'server_error', code: null } });
      sendJson(x.res, 200, {
        id: `chatcmpl-${account}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: x.record.model,
        choices: [{ index: 0, message: { role: 'assistant', content: `from ${account}` }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      });
    } finally {
      this.inFlight.set(account, (this.inFlight.get(account) ?? 1) - 1);
    }
  });

  reset(): void {
    this.seen.length = 0;
    this.mostInFlight.clear();
  }
}

/** Several accounts behind one provider (decisions §7). */
describe('provider accounts', () => {
  const upstream = new AccountsUpstream();
  const logs = new LogCapture();
  let backup: FakeOpenAi;
  let t: TestApp | undefined;
  let replica: TestApp | undefined;
  let client: OpenAI;
  let secret: string;
  /** Every answer's headers and body, searched for the keys at the end. */
  const answers: string[] = [];

  beforeAll(async () => {
    await upstream.fake.listen('/v1');
    backup = await startFakeOpenAi({ name: 'acct-backup' });
    const yaml = `
providers:
  - name: acct-pooled
    kind: openai
    base_url: "${upstream.fake.url}"
    retries: 0
    queue_timeout_ms: ${QUEUE_TIMEOUT_MS}
    accounts:
      - { name: alpha, api_key: "\${ALPHA_KEY}", max_concurrency: 1 }
      - { name: beta, api_key: "\${BETA_KEY}", max_concurrency: 1 }
      - { name: gamma, api_key: "\${GAMMA_KEY}" }
  - name: acct-backup
    kind: openai
    base_url: "${backup.url}"
    api_key: "${BACKUP_KEY}"
`;
    const gateway = parseGatewayConfig(yaml, 'accounts test', { ALPHA_KEY: KEYS.alpha, BETA_KEY: KEYS.beta });
    expect(gateway.warnings).toEqual(["account 'gamma' of provider 'acct-pooled' left out: its api_key is empty"]);
    const env = { LOG_LEVEL: 'trace', SVC_BREAKER_COOLDOWN_MS: String(COOLDOWN_MS) };
    logs.start();
    t = await startApp({ gateway, env });
    replica = await startApp({ gateway, env });
    ({ secret } = await t.createKey('accounts', [
      { provider: 'acct-pooled', model: 'm-pool' },
      { provider: 'acct-backup', model: 'm-backup' },
    ]));
    client = new OpenAI({ apiKey: secret, baseURL: `${t.url}/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await replica?.close();
    await t?.close();
    logs.stop();
    await upstream.fake.close();
    await backup?.close();
  });

  const ask = async () => {
    const started = Date.now();
    const { data, response } = await client.chat.completions.create({ model: 'm-pool', messages }).withResponse();
    answers.push(JSON.stringify([...response.headers]), JSON.stringify(data));
    return {
      provider: response.headers.get('x-svc-provider-used'),
      requestId: response.headers.get('x-svc-request-id') ?? '',
      content: data.choices[0].message.content,
      ms: Date.now() - started,
    };
  };
  const get = async (app: TestApp, path: string, token = secret) => {
    const res = await app.http.get(path).set('Authorization', `Bearer ${token}`);
    answers.push(JSON.stringify(res.headers), res.text);
    return res;
  };
  const usageOf = async (requestId: string) => {
    await t!.app.get(UsageWriter).flush();
    const res = await get(t!, `/v1/usage?request_id=${requestId}`);
    return (res.body as { data: Array<{ attempts: Array<Record<string, unknown>> }> }).data[0];
  };
  const pooledEntry = async (app: TestApp) =>
    ((await get(app, '/v1/providers/health')).body as { providers: Array<Record<string, unknown>> }).providers.find(
      (p) => p.provider === 'acct-pooled',
    );

  it('spreads two concurrent calls over both accounts, each sending its own key, never two in flight on one', async () => {
    upstream.reset();
    upstream.holdMs = 400;
    const served = await Promise.all([ask(), ask()]);
    expect(served.map((s) => s.provider)).toEqual(['acct-pooled', 'acct-pooled']);
    expect([...upstream.seen].sort()).toEqual(['alpha', 'beta']);
    expect(Object.fromEntries(upstream.mostInFlight)).toEqual({ alpha: 1, beta: 1 });
    expect(served.map((s) => s.content).sort()).toEqual(['from alpha', 'from beta']);
    // the usage record names the account that served (never its key)
    const records = await Promise.all(served.map((s) => usageOf(s.requestId)));
    expect(records.map((r) => r.attempts[0].account).sort()).toEqual(['alpha', 'beta']);
    expect(records[0].attempts[0]).toMatchObject({ provider: 'acct-pooled', outcome: 'ok' });
  });

  it('sends a third concurrent call to the next step after queue_timeout_ms, with no breaker failure', async () => {
    upstream.reset();
    upstream.holdMs = 2500;
    const served = await Promise.all([ask(), ask(), ask()]);
    const third = served.filter((s) => s.provider === 'acct-backup');
    expect(third).toHaveLength(1);
    expect(served.filter((s) => s.provider === 'acct-pooled')).toHaveLength(2);
    // it waited for a slot for queue_timeout_ms, then moved on at once (the slots stayed busy far longer)
    expect(third[0].ms).toBeGreaterThanOrEqual(QUEUE_TIMEOUT_MS - 20);
    expect(third[0].ms).toBeLessThan(QUEUE_TIMEOUT_MS + 900);
    expect(Object.fromEntries(upstream.mostInFlight)).toEqual({ alpha: 1, beta: 1 });
    const record = await usageOf(third[0].requestId);
    expect(record.attempts[0]).toMatchObject({ provider: 'acct-pooled', outcome: 'skipped: no free account slot' });
    expect(record.attempts[1]).toMatchObject({ provider: 'acct-backup', outcome: 'ok' });
    expect(await pooledEntry(t!)).toMatchObject({
      status: 'healthy',
      consecutive_failures: 0,
      accounts: [
        { name: 'alpha', status: 'healthy', in_flight: 0, consecutive_failures: 0 },
        { name: 'beta', status: 'healthy', in_flight: 0, consecutive_failures: 0 },
      ],
    });
  });

  it('lets a waiting call take a slot given back within queue_timeout_ms', async () => {
    upstream.reset();
    upstream.holdMs = 120;
    const served = await Promise.all([ask(), ask(), ask()]);
    expect(served.map((s) => s.provider)).toEqual(['acct-pooled', 'acct-pooled', 'acct-pooled']);
    expect(upstream.seen).toHaveLength(3);
    expect(Object.fromEntries(upstream.mostInFlight)).toMatchObject({ alpha: 1, beta: 1 });
  });

  it('takes one account failing 5 times out alone, on every replica, while the other serves', async () => {
    upstream.reset();
    upstream.holdMs = 0;
    upstream.failing.add('alpha');
    for (let i = 0; i < 80 && upstream.seen.filter((a) => a === 'alpha').length < 5; i++) {
      const { provider, content } = await ask();
      // a failed account's call goes on to the next step: the client still gets an answer
      expect(provider === 'acct-backup' || content === 'from beta').toBe(true);
    }
    expect(upstream.seen.filter((a) => a === 'alpha')).toHaveLength(5);
    await t!.app.get(CircuitRegistry).flushAll();
    const down = {
      status: 'degraded',
      accounts: [
        { name: 'alpha', status: 'down', in_flight: 0, consecutive_failures: 5 },
        { name: 'beta', status: 'healthy', in_flight: 0, consecutive_failures: 0 },
      ],
    };
    expect(await pooledEntry(t!)).toMatchObject(down);
    const metrics = await get(t!, '/metrics', ADMIN_TOKEN);
    expect(metrics.text).toContain('svc_account_circuit_state{provider="acct-pooled",account="alpha",state="down"} 1');
    expect(metrics.text).toContain(
      'svc_account_circuit_state{provider="acct-pooled",account="beta",state="healthy"} 1',
    );
    // the account's circuit is shared through PostgreSQL, as a provider's is
    const seen = await eventually(
      () => pooledEntry(replica!),
      (entry) => (entry?.accounts as Array<{ status: string }> | undefined)?.[0]?.status === 'down',
      5000,
      'the replica seeing the account down',
    );
    expect(seen).toMatchObject(down);
    upstream.reset();
    const after = [];
    for (let i = 0; i < 6; i++) after.push(await ask());
    expect(after.map((s) => s.provider)).toEqual(Array(6).fill('acct-pooled'));
    expect(upstream.seen).toEqual(Array(6).fill('beta'));
  });

  it("heals the account with its own trial once its cooldown is over, as the provider's recovery", async () => {
    upstream.failing.clear();
    await sleep(COOLDOWN_MS + 100);
    upstream.reset();
    // the next call is the trial of the cooled-down account, though the other has room
    expect((await ask()).content).toBe('from alpha');
    await t!.app.get(CircuitRegistry).flushAll();
    expect(await pooledEntry(t!)).toMatchObject({
      status: 'healthy',
      accounts: [
        { name: 'alpha', status: 'healthy', consecutive_failures: 0 },
        { name: 'beta', status: 'healthy', consecutive_failures: 0 },
      ],
    });
    const recovered = await storedEvents(
      t!,
      "type = 'provider_recovered' AND provider = $1 AND created_at > now() - interval '1 minute'",
      ['acct-pooled'],
      'the recovery event',
    );
    expect(recovered).toHaveLength(1);
  });

  it('shows no account key in any answer, header, /metrics or log line', async () => {
    const metrics = await get(t!, '/metrics', ADMIN_TOKEN);
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain('svc_account_in_flight{provider="acct-pooled",account="beta"} 0');
    await replica!.close();
    await t!.close();
    [replica, t] = [undefined, undefined];
    await sleep(200);
    const logText = logs.text;
    // the capture holds the service's lines: the account's circuit opening is among them
    expect(logText).toContain('circuit of acct-pooled/alpha opened');
    for (const key of [...Object.values(KEYS), BACKUP_KEY]) {
      for (const answer of answers) expect(answer).not.toContain(key);
      expect(logText).not.toContain(key);
    }
    expect(answers.length).toBeGreaterThan(20);
  });
});
