import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { projectRoot } from '../src/common/paths';
import { RETRY_JITTER_MS } from '../src/providers/attempt-policy';
import { GATEWAY_SCRIPT } from './chat-modes';
import { createBenchKey, gatewayEnv, startGateway } from './processes';
import { writeSection } from './results-file';
import { log, machine, runBenchmark, secondsFromEnv } from './run';

/**
 * `npm run bench:retry`: what a 500-once request costs (decisions §3: one retry on the same step after a random
 * 100-500 ms). A fake upstream answers a request's first attempt with a 500 and its second with the completion;
 * clean requests are answered at once. The two kinds are sent in turns at c=1 through one gateway; the gap of
 * their p50s is the retry's price, printed beside the expected wait (the jitter's median).
 */

const RESULTS_FILE = join(projectRoot(), 'bench/results.md');
const PAIRS = Math.round(secondsFromEnv('BENCH_RETRY_PAIRS', 60));
const EXPECTED_MS = (RETRY_JITTER_MS.min + RETRY_JITTER_MS.max) / 2;

/** The fake: a request whose prompt starts `once-` fails its first attempt (by prompt), everything else succeeds. */
function startUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const seen = new Set<string>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = [];
    req.on('data', (chunk: Buffer) => parts.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(parts).toString('utf8') || '{}') as {
        messages?: Array<{ content?: string }>;
      };
      const prompt = body.messages?.[0]?.content ?? '';
      const reply = (status: number, payload: unknown): void => {
        const text = JSON.stringify(payload);
        res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.end(text);
      };
      if (prompt.startsWith('once-') && !seen.has(prompt)) {
        seen.add(prompt);
        return reply(500, { error: { message: 'once', type: 'server_error', param: null, code: null } });
      }
      reply(200, {
        id: 'chatcmpl-bench',
        object: 'chat.completion',
        created: 0,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      });
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        close: () => new Promise<void>((done) => server.close(() => done())),
      }),
    ),
  );
}

const p50 = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

runBenchmark('bench:retry', async (run) => {
  const upstream = await startUpstream();
  run.track({ stop: () => upstream.close() });
  const database = await run.createDatabase('retry');
  const config = join(run.tmp, 'gateway.yaml');
  writeFileSync(
    config,
    `providers:\n  - name: primary\n    kind: openai\n    base_url: ${upstream.url}\n    api_key: x\n`,
  );
  const gateway = run.track(
    await startGateway({
      script: GATEWAY_SCRIPT,
      logFile: join(run.tmp, 'retry.log'),
      env: gatewayEnv(database.url, config, { LOG_LEVEL: 'warn' }),
    }),
  );
  const secret = await createBenchKey(gateway.url, 'retry bench', [{ provider: 'primary', model: 'm' }]);
  const ask = async (prompt: string): Promise<{ ms: number; attempts: string | null }> => {
    const started = performance.now();
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: prompt }] }),
    });
    await res.text();
    if (res.status !== 200) throw new Error(`${prompt}: HTTP ${res.status}`);
    return { ms: performance.now() - started, attempts: res.headers.get('x-svc-attempts') };
  };
  for (let i = 0; i < 20; i++) await ask(`warm-${i}`);
  const clean: number[] = [];
  const once: number[] = [];
  for (let i = 0; i < PAIRS; i++) {
    clean.push((await ask(`clean-${i}`)).ms);
    const retried = await ask(`once-${i}`);
    if (retried.attempts !== '2') throw new Error(`a 500-once request made ${retried.attempts} attempts, not 2`);
    once.push(retried.ms);
  }
  const extra = p50(once) - p50(clean);
  const { cores, cpu } = machine();
  const pass = extra >= RETRY_JITTER_MS.min * 0.5 && extra <= RETRY_JITTER_MS.max;
  const rows = [
    `| p50 of a clean request | ${p50(clean).toFixed(1)} ms | — | |`,
    `| p50 of a 500-once request | ${p50(once).toFixed(1)} ms | — | |`,
    `| 500-once minus clean (one retry wait) | ${extra.toFixed(1)} ms | ≈ ${EXPECTED_MS} ms (the 100–500 ms wait's median), within one wait | ${pass ? 'pass' : 'MISS'} |`,
  ];
  const section = [
    '## A 500-once request costs one retry wait (`bench:retry`)',
    '',
    `${PAIRS} pairs at c=1, a clean request then one whose first attempt gets a 500, through \`node dist/src/main.js\` (one step, \`retries\` 1); ${cores} × ${cpu}.`,
    '',
    '| Figure | Value | Target | |',
    '|---|---|---|---|',
    ...rows,
  ].join('\n');
  log(section);
  writeSection(RESULTS_FILE, 'retry', section);
});
