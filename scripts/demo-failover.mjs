#!/usr/bin/env node
// `npm run demo:failover`: a failover from start to recovery on the embedded database, in one command.
// Starts a fake upstream that fails on command, a webhook receiver that verifies signatures and a gateway
// (its own port and data directory), drives each step with fetch, and exits 0 only when every step was seen.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeUpstream } from './demo/fake-upstream.mjs';
import { startWebhookReceiver } from './demo/webhook-receiver.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Short enough to watch: the circuit stays open this long before its trial. */
const COOLDOWN_MS = 3000;
/** Seconds a failover condition's window stays open (its first failover is delivered at once). */
const EVENT_WINDOW_SECS = 2;
const MODEL = 'gpt-5.4-mini';
const THRESHOLD = 5;

const say = (line = '') => process.stdout.write(`${line}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class StepNotSeen extends Error {}

/** Fails the demo at this step with what was missing. */
function expectSeen(condition, what) {
  if (!condition) throw new StepNotSeen(what);
}

async function waitUntil(check, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) return undefined;
    await sleep(100);
  }
}

/** Starts `node dist/src/main.js` (what `npm start` runs) with the demo's settings; resolves once it listens. */
async function startGateway(env) {
  const childEnv = { ...process.env, LOG_LEVEL: 'warn', ...env };
  // the demo always runs on the embedded database, whatever the shell has set
  delete childEnv.DATABASE_URL;
  const child = spawn(process.execPath, [join(root, 'dist/src/main.js')], { cwd: root, env: childEnv });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk.toString()));
  child.stderr.on('data', (chunk) => (output += chunk.toString()));
  const exited = new Promise((resolve) => child.on('close', (code) => resolve(code)));
  let gone = false;
  void exited.then(() => (gone = true));
  const banner = await waitUntil(() => {
    if (gone) return 'exited';
    const base = /Gateway listening on (http:\/\/\S+)/.exec(output);
    const key = /Demo key \(shown once, keep it\): (sk-svc-[0-9A-Za-z]+)/.exec(output);
    const database = /Database: +(.+)/.exec(output);
    return base && key && database ? { base: base[1], key: key[1], database: database[1] } : undefined;
  }, 120000);
  return { child, exited, banner: banner === 'exited' ? undefined : banner, output: () => output };
}

/** A chat request as the steps send it, with the curl a reader can repeat. */
async function chat(ctx) {
  const body = { model: MODEL, messages: [{ role: 'user', content: 'Hello' }] };
  const res = await fetch(`${ctx.base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ctx.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15000),
  });
  const json = await res.json();
  const header = (name) => res.headers.get(name);
  return {
    status: res.status,
    provider: header('x-svc-provider-used'),
    level: header('x-svc-fallback-level'),
    isFallback: header('x-svc-is-fallback'),
    alert: header('x-svc-fallback-alert'),
    requestId: header('x-svc-request-id'),
    content: json.choices?.[0]?.message?.content ?? JSON.stringify(json),
  };
}

const CHAT_CURL =
  `curl -s $BASE/v1/chat/completions -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' ` +
  `-d '{"model":"${MODEL}","messages":[{"role":"user","content":"Hello"}]}' -D -`;
const HEALTH_CURL = `curl -s $BASE/v1/providers/health -H "Authorization: Bearer $KEY"`;

function printAnswer(answer) {
  say(
    `    → ${answer.status}  x-svc-provider-used: ${answer.provider}  x-svc-is-fallback: ${answer.isFallback}  x-svc-fallback-level: ${answer.level}`,
  );
  if (answer.alert) say(`      x-svc-fallback-alert: ${answer.alert}`);
  say(`      ${answer.content}`);
}

async function health(ctx) {
  const res = await fetch(`${ctx.base}/v1/providers/health`, {
    headers: { authorization: `Bearer ${ctx.key}` },
    signal: AbortSignal.timeout(15000),
  });
  return res.json();
}
const circuitOf = (report, name) => report.providers?.find((p) => p.provider === name);
const describeCircuit = (c) =>
  c
    ? `${c.provider}: ${c.status}, ${c.consecutive_failures} failures, cooldown ${c.cooldown_remaining_secs} s`
    : 'absent';

async function control(ctx, verb) {
  say(`    $ curl -s -X POST $UPSTREAM/control/${verb}`);
  await fetch(`${ctx.upstream.url}/control/${verb}`, { method: 'POST' });
}

const steps = [
  {
    title: 'A chat answered by the primary (flaky)',
    async run(ctx) {
      say(`    $ ${CHAT_CURL}`);
      const answer = await chat(ctx);
      printAnswer(answer);
      expectSeen(answer.status === 200 && answer.provider === 'flaky' && answer.level === '0', 'a 200 served by flaky');
      return 'served by flaky at level 0';
    },
  },
  {
    title: 'The primary fails: echo serves the answer, and the headers say so',
    async run(ctx) {
      await control(ctx, 'fail');
      say(`    $ ${CHAT_CURL}`);
      const answer = await chat(ctx);
      printAnswer(answer);
      ctx.failedOverRequest = answer.requestId;
      expectSeen(answer.status === 200 && answer.provider === 'echo', 'a 200 served by echo');
      expectSeen(answer.level === '1' && answer.alert?.includes('"exhausted_provider":"flaky"'), 'the fallback alert');
      return 'x-svc-provider-used: echo, x-svc-fallback-level: 1, x-svc-fallback-alert names flaky';
    },
  },
  {
    title: 'The signed failover webhook arrives at the receiver',
    async run(ctx) {
      say(
        `    (the receiver checks X-SVC-Signature: HMAC-SHA256 of "<X-SVC-Timestamp>.<raw body>" with the whsec_ secret)`,
      );
      const event = await waitUntil(
        () => ctx.receiver.verified.find((e) => e.event === 'failover' && e.data?.request_id === ctx.failedOverRequest),
        15000,
      );
      expectSeen(
        event,
        `a verified failover event for ${ctx.failedOverRequest} (${ctx.receiver.rejected} deliveries failed verification)`,
      );
      return `failover ${event.id} verified (request_id=${event.data.request_id})`;
    },
  },
  {
    title: `After ${THRESHOLD} failures the circuit is down, and requests skip flaky`,
    async run(ctx) {
      say(`    ${THRESHOLD - 1} more chats, each served by echo:`);
      for (let i = 2; i <= THRESHOLD; i++) {
        const answer = await chat(ctx);
        say(`    failure ${i}: → ${answer.status} x-svc-provider-used: ${answer.provider}`);
        expectSeen(answer.provider === 'echo', `failure ${i} served by echo`);
      }
      say(`    $ ${HEALTH_CURL}`);
      const report = await waitUntil(async () => {
        const r = await health(ctx);
        return circuitOf(r, 'flaky')?.status === 'down' ? r : undefined;
      }, 5000);
      expectSeen(
        report,
        `flaky down in /v1/providers/health (it says ${describeCircuit(circuitOf(await health(ctx), 'flaky'))})`,
      );
      say(`    → ${JSON.stringify(report)}`);
      const before = ctx.upstream.chatRequests;
      say(`    $ ${CHAT_CURL}`);
      const skipped = await chat(ctx);
      printAnswer(skipped);
      expectSeen(skipped.provider === 'echo' && ctx.upstream.chatRequests === before, 'a request that skips flaky');
      return 'flaky is down; the next request went straight to echo (the upstream got no call)';
    },
  },
  {
    title: 'The primary recovers: after the cooldown the next chat is the trial, and provider_recovered arrives',
    async run(ctx) {
      await control(ctx, 'recover');
      say(`    waiting for the cooldown (SVC_BREAKER_COOLDOWN_MS=${COOLDOWN_MS}): flaky becomes recovering…`);
      say(`    $ ${HEALTH_CURL}`);
      const recovering = await waitUntil(async () => {
        const r = await health(ctx);
        return circuitOf(r, 'flaky')?.status === 'recovering' ? r : undefined;
      }, COOLDOWN_MS + 10000);
      expectSeen(recovering, 'flaky recovering in /v1/providers/health once the cooldown is over');
      say(`    → ${JSON.stringify(recovering)}`);
      say('    the next chat is the trial: a real request, sent to flaky alone (others skip it meanwhile)');
      say(`    $ ${CHAT_CURL}`);
      const answer = await chat(ctx);
      printAnswer(answer);
      expectSeen(answer.provider === 'flaky' && answer.level === '0', 'the trial chat served by flaky');
      const event = await waitUntil(
        () =>
          ctx.receiver.verified.find((e) => e.event === 'provider_recovered' && e.data?.active_provider === 'flaky'),
        20000,
      );
      expectSeen(
        event,
        `a verified provider_recovered event (${ctx.receiver.rejected} deliveries failed verification)`,
      );
      expectSeen(event.data.request_id === answer.requestId, "provider_recovered naming the trial chat's request id");
      say(`    $ ${HEALTH_CURL}`);
      const report = await health(ctx);
      say(`    → ${JSON.stringify(report)}`);
      expectSeen(circuitOf(report, 'flaky')?.status === 'healthy', 'flaky healthy in /v1/providers/health');
      return `the trial ${answer.requestId} healed flaky; provider_recovered ${event.id} verified`;
    },
  },
];

function printPieces() {
  say('Run the pieces yourself, each in its own terminal, against `npm start` (details: docs/failover-demo.md):');
  say('  node scripts/demo/fake-upstream.mjs                     # OpenAI-compatible fake on :4010');
  say('  SVC_CONFIG=config/demo-failover.yaml SVC_DATA_DIR=.data-demo SVC_WEBHOOK_ALLOW_PRIVATE=true \\');
  say('    SVC_BREAKER_COOLDOWN_MS=5000 SVC_FAILOVER_EVENT_WINDOW=5 npm start   # prints a demo key: KEY=sk-svc-…');
  say(
    `  curl -s localhost:3000/v1/user/webhooks -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \\`,
  );
  say(
    `    -d '{"url":"http://127.0.0.1:4020/webhook","events":["failover","provider_recovered"]}'   # → "secret":"whsec_…"`,
  );
  say('  WEBHOOK_SECRET=whsec_… node scripts/demo/webhook-receiver.mjs   # verifies and prints each event, on :4020');
  say('  then BASE=http://localhost:3000 UPSTREAM=http://127.0.0.1:4010 and the curl lines above.');
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'svc-failover-demo-'));
  const pieces = [];
  let gateway;
  let failed = null;
  // Ctrl-C or a process manager's stop: leave no gateway and no temporary directory behind
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      say(`${signal} received: stopping the demo`);
      gateway?.child.kill('SIGTERM');
      void (gateway?.exited ?? Promise.resolve()).then(() => {
        rmSync(dir, { recursive: true, force: true });
        process.exit(130);
      });
    });
  }
  try {
    const upstream = await startFakeUpstream({ port: 0, log: say });
    pieces.push(upstream);
    const receiver = await startWebhookReceiver({ port: 0, log: say });
    pieces.push(receiver);
    const config = readFileSync(join(root, 'config/demo-failover.yaml'), 'utf8').replace(
      'http://127.0.0.1:4010/v1',
      `${upstream.url}/v1`,
    );
    writeFileSync(join(dir, 'gateway.yaml'), config);
    const env = {
      SVC_CONFIG: join(dir, 'gateway.yaml'),
      SVC_DATA_DIR: join(dir, 'data'),
      PORT: '0',
      HOST: '127.0.0.1',
      SVC_WEBHOOK_ALLOW_PRIVATE: 'true',
      SVC_BREAKER_COOLDOWN_MS: String(COOLDOWN_MS),
      SVC_FAILOVER_EVENT_WINDOW: String(EVENT_WINDOW_SECS),
      // what the steps count on, whatever the shell has set
      SVC_BREAKER_THRESHOLD: String(THRESHOLD),
      SVC_DEMO_KEY: 'true',
    };
    say('Failover demo: a gateway on the embedded database, a fake upstream "flaky" in front of the built-in "echo",');
    say('and a webhook receiver that verifies signatures. Settings of this gateway:');
    say(
      `  ${Object.entries(env)
        .map(([name, value]) => `${name}=${value}`)
        .join(' ')}`,
    );
    say('Starting the gateway (node dist/src/main.js, what npm start runs)…');
    gateway = await startGateway(env);
    if (!gateway.banner)
      throw new StepNotSeen(`the gateway did not start; its output:\n${gateway.output().slice(-4000)}`);
    const ctx = { base: gateway.banner.base, key: gateway.banner.key, upstream, receiver };
    say(`Gateway listening on ${ctx.base}; database: ${gateway.banner.database}`);
    say(`BASE=${ctx.base} KEY=${ctx.key} UPSTREAM=${upstream.url}`);
    say(`  (the demo key's chain: flaky ${MODEL}, then echo echo-1)`);
    say();
    say('Subscribing the receiver to failover and provider_recovered:');
    say(`    $ curl -s $BASE/v1/user/webhooks -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \\`);
    say(`        -d '{"url":"${receiver.url}","events":["failover","provider_recovered"]}'`);
    const created = await fetch(`${ctx.base}/v1/user/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url, events: ['failover', 'provider_recovered'] }),
    });
    const endpoint = await created.json();
    say(`    → ${created.status} ${JSON.stringify({ ...endpoint, secret: endpoint.secret ? 'whsec_…' : undefined })}`);
    if (created.status !== 201)
      throw new StepNotSeen(`the webhook endpoint was not created: ${JSON.stringify(endpoint)}`);
    receiver.setSecret(endpoint.secret);

    for (const [i, step] of steps.entries()) {
      say();
      say(`Step ${i + 1}/${steps.length}: ${step.title}`);
      try {
        say(`  ✔ step ${i + 1} seen: ${await step.run(ctx)}`);
      } catch (err) {
        failed = `step ${i + 1} (${step.title}) not seen: ${err instanceof StepNotSeen ? err.message : String(err)}`;
        break;
      }
    }
  } catch (err) {
    failed = `the demo could not run: ${err instanceof StepNotSeen ? err.message : String(err?.stack ?? err)}`;
  } finally {
    if (gateway) {
      gateway.child.kill('SIGTERM');
      const code = await Promise.race([gateway.exited, sleep(15000).then(() => 'timeout')]);
      if (code === 'timeout') gateway.child.kill('SIGKILL');
    }
    for (const piece of pieces) await piece.close();
    rmSync(dir, { recursive: true, force: true });
  }
  say();
  if (failed) {
    say(`FAILED: ${failed}`);
    if (gateway) say(`The gateway's last output:\n${gateway.output().slice(-3000)}`);
    process.exitCode = 1;
  } else {
    say(`All ${steps.length} steps seen: primary, failover with its headers, signed failover webhook, circuit down,`);
    say('recovery with a signed provider_recovered webhook.');
  }
  say();
  printPieces();
}

await main();
// idle keep-alive sockets of fetch would hold the process a few seconds more
process.exit();
