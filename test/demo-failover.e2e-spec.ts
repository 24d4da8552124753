import { createHmac } from 'node:crypto';
import { ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { projectRoot } from '../src/common/paths';
import { startApp, TestApp } from './support/app';

// the demo boots its own gateway on the embedded database (PGlite) and waits out a 3 s cooldown
jest.setTimeout(200000);

/** The one command the README gives a newcomer, run as their shell runs it. */
const DEMO_COMMAND = 'npm run demo:failover';

interface Piece {
  child: ChildProcessWithoutNullStreams;
  output(): string;
}

/** A piece of the demo started as its page says (`node scripts/demo/<file> …`); resolves once it printed `ready`. */
async function startPiece(
  command: string,
  env: Record<string, string>,
  ready: RegExp,
): Promise<Piece & { match: RegExpMatchArray }> {
  const child = spawn('bash', ['-c', `exec ${command}`], { cwd: projectRoot(), env: { ...process.env, ...env } });
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const deadline = Date.now() + 20000;
  for (;;) {
    const match = ready.exec(text);
    if (match) return { child, match, output: () => text };
    if (Date.now() > deadline) throw new Error(`${command} printed no ${ready}; output:\n${text}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A delivery signed as the gateway signs it: `sha256=` + HMAC-SHA256 of `<timestamp>.<raw body>` with the secret. */
function signed(secret: string, body: string): Record<string, string> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return { 'content-type': 'application/json', 'x-svc-timestamp': timestamp, 'x-svc-signature': `sha256=${signature}` };
}

/** Longest the demo may take once built (it takes 10 to 40 s on 2 shared cores, most of it the gateway's boot). */
const DEMO_BOUND_MS = 150000;

/** Runs the demo in a shell, in its own process group, killed with everything it started past the bound. */
function runDemo(): Promise<{ code: number | null; output: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.DATABASE_URL; // a newcomer's shell: the embedded default
  const child = spawn('bash', ['-c', DEMO_COMMAND], { cwd: projectRoot(), env, detached: true });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      process.kill(-(child.pid ?? 0), 'SIGKILL');
      reject(new Error(`${DEMO_COMMAND} did not exit within ${DEMO_BOUND_MS} ms; its output:\n${output}`));
    }, DEMO_BOUND_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('npm run demo:failover (README "See a failover in five minutes")', () => {
  it('exits 0 on the embedded database after showing every step in order, each with real output', async () => {
    const run = await runDemo();
    const out = run.output;
    if (run.code !== 0) throw new Error(`the demo exited ${run.code}:\n${out}`);

    // the order a newcomer reads: primary, failover with its headers, signed failover webhook, circuit down, recovery
    const marks = [
      /x-svc-provider-used: flaky {2}x-svc-is-fallback: false {2}x-svc-fallback-level: 0/,
      /✔ step 1 seen/,
      /upstream {2}\| told to FAIL/,
      /x-svc-provider-used: echo {2}x-svc-is-fallback: true {2}x-svc-fallback-level: 1/,
      /x-svc-fallback-alert: \{"message":"flaky failed \(HTTP 503\); served by echo at level 1","exhausted_provider":"flaky","active_provider":"echo","fallback_level":1\}/,
      /✔ step 2 seen/,
      /receiver {2}\| signature verified ✓ failover evt_\S+: flaky failed, served by echo at level 1 request_id=req_/,
      /✔ step 3 seen/,
      /"provider":"flaky","status":"down","consecutive_failures":5/,
      /flaky failed \(circuit open\); served by echo/,
      /✔ step 4 seen/,
      /upstream {2}\| told to RECOVER/,
      /"provider":"flaky","status":"recovering"/,
      /the next chat is the trial/,
      /upstream {2}\| POST \/v1\/chat\/completions → 200/,
      /x-svc-provider-used: flaky {2}x-svc-is-fallback: false {2}x-svc-fallback-level: 0/,
      /receiver {2}\| signature verified ✓ provider_recovered evt_\S+: provider flaky is healthy again/,
      /"provider":"flaky","status":"healthy"/,
      /✔ step 5 seen/,
      /All 5 steps seen/,
    ];
    let from = 0;
    for (const mark of marks) {
      const at = out.slice(from).search(mark);
      if (at < 0) throw new Error(`the demo's output lacks ${mark} after offset ${from}:\n${out}`);
      from += at;
    }
    expect(out).not.toContain('REJECTED');
    // the embedded database, not the test run's PostgreSQL; and a curl beside each request to repeat it by hand
    expect(out).toMatch(/database: embedded PostgreSQL in \S+/);
    expect(out).toContain(`$ curl -s $BASE/v1/chat/completions -H "Authorization: Bearer $KEY"`);
    expect(out).toContain('$ curl -s $BASE/v1/providers/health -H "Authorization: Bearer $KEY"');
    expect(out).toContain('$ curl -s -X POST $UPSTREAM/control/fail');
    // how to run the pieces against `npm start`
    expect(out).toContain('node scripts/demo/fake-upstream.mjs');
    expect(out).toContain('node scripts/demo/webhook-receiver.mjs');
    expect(out).toContain('SVC_CONFIG=config/demo-failover.yaml');
  });

  describe('its pieces, run on their own', () => {
    const pieces: Piece[] = [];
    afterAll(() => {
      for (const piece of pieces) piece.child.kill('SIGTERM');
    });

    it('the fake upstream answers chat, fails with 503 on /control/fail (chat and the probe) and recovers on /control/recover', async () => {
      const upstream = await startPiece(
        'node scripts/demo/fake-upstream.mjs --port 0',
        {},
        /fake at (http:\/\/\S+)\/v1 /,
      );
      pieces.push(upstream);
      const url = upstream.match[1];
      const chat = (): Promise<Response> =>
        fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gpt-5.4-mini', messages: [{ role: 'user', content: 'Hi' }] }),
        });
      expect((await chat()).status).toBe(200);
      expect((await fetch(`${url}/control/fail`, { method: 'POST' })).status).toBe(200);
      const failed = await chat();
      expect(failed.status).toBe(503);
      expect(((await failed.json()) as { error: { type: string } }).error.type).toBe('server_error');
      expect((await fetch(`${url}/v1/models`)).status).toBe(503);
      await fetch(`${url}/control/recover`, { method: 'POST' });
      expect((await chat()).status).toBe(200);
      expect((await fetch(`${url}/v1/models`)).status).toBe(200);
    });

    it('the receiver prints a delivery whose signature verifies and refuses one signed with another secret', async () => {
      const secret = 'whsec_demo-receiver-test-secret';
      const receiver = await startPiece(
        'node scripts/demo/webhook-receiver.mjs --port 0',
        { WEBHOOK_SECRET: secret },
        /listening at (http:\/\/\S+);/,
      );
      pieces.push(receiver);
      const url = receiver.match[1];
      const body = JSON.stringify({
        id: 'evt_demo1',
        event: 'failover',
        timestamp: new Date().toISOString(),
        data: { exhausted_provider: 'flaky', active_provider: 'echo', fallback_level: 1, request_id: 'req_demo1' },
      });
      expect((await fetch(url, { method: 'POST', headers: signed(secret, body), body })).status).toBe(204);
      const forged = await fetch(url, { method: 'POST', headers: signed('whsec_someone-else', body), body });
      expect(forged.status).toBe(400);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(receiver.output()).toContain(
        'signature verified ✓ failover evt_demo1: flaky failed, served by echo at level 1 request_id=req_demo1',
      );
      expect(receiver.output()).toContain('REJECTED a delivery: invalid signature');
    });
  });

  describe('without SVC_WEBHOOK_ALLOW_PRIVATE', () => {
    let strict: TestApp;
    beforeAll(async () => {
      strict = await startApp({ env: { SVC_WEBHOOK_ALLOW_PRIVATE: 'false' } });
    });
    afterAll(async () => {
      await strict?.close();
    });

    it("refuses the demo receiver's loopback URL with a message that names SVC_WEBHOOK_ALLOW_PRIVATE=true", async () => {
      const { secret } = await strict.createKey('demo without the setting');
      const res = await strict.http
        .post('/v1/user/webhooks')
        .set('Authorization', `Bearer ${secret}`)
        .send({ url: 'http://127.0.0.1:4020/webhook', events: ['failover', 'provider_recovered'] });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'webhook_url_not_allowed', param: 'url' });
      expect(res.body.error.message).toContain('SVC_WEBHOOK_ALLOW_PRIVATE=true');
    });
  });
});
