import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { projectRoot } from '../src/common/paths';
import { startFakeAnthropic } from '../test/fakes/fake-anthropic';
import { startFakeOpenAi } from '../test/fakes/fake-openai';
import { percentile } from './load';
import { createBenchKey, gatewayEnv, startGateway } from './processes';
import { reportTargets, type TargetRow } from './results-file';
import { log, machine, runBenchmark } from './run';

/**
 * `npm run bench:continuation`: the gap a continued chat stream leaves (decisions §3), from the last chunk the
 * broken step delivered to the first continued chunk, as the client reads them, for `restart` (an OpenAI-kind
 * step regenerates the delivered text, which the gateway swallows) and `prefill` (an Anthropic-kind step continues
 * the delivered text). The primary cuts every answer after CUT_AFTER chunks; every upstream writes a chunk each
 * CHUNK_MS, so the restart's gap holds the regeneration of what was delivered, the prefill's only its first chunk.
 */

const ROOT = projectRoot();
const RESULTS_FILE = join(ROOT, 'bench/results.md');
const REQUESTS = Number(process.env.BENCH_CONTINUATION_REQUESTS ?? 25);
const CUT_AFTER = 20;
const CHUNK_MS = 5;
const REPLY = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
const BODY = JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'hi' }], stream: true });

interface Continued {
  gapMs: number;
  whole: boolean;
}

/** One streamed answer: the gap before its svc_continuation chunk, and whether its text is the whole reply once. */
async function continuedGap(url: string, secret: string): Promise<Continued> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: BODY,
  });
  const decoder = new TextDecoder();
  let buffered = '';
  let text = '';
  let last = performance.now();
  let gapMs = NaN;
  for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
    const now = performance.now();
    buffered += decoder.decode(bytes, { stream: true });
    const events = buffered.split('\n\n');
    buffered = events.pop() ?? '';
    for (const event of events) {
      const data = event.replace(/^data: /, '');
      if (data === '[DONE]') continue;
      const chunk = JSON.parse(data) as {
        svc_continuation?: unknown;
        choices?: Array<{ delta?: { content?: string } }>;
      };
      if (chunk.svc_continuation && Number.isNaN(gapMs)) gapMs = now - last;
      text += chunk.choices?.[0]?.delta?.content ?? '';
    }
    last = now;
  }
  return { gapMs, whole: text === REPLY };
}

runBenchmark('continuation', async (run) => {
  const [primary, restart] = await Promise.all(
    ['primary', 'restart'].map((name) => startFakeOpenAi({ name, reply: REPLY, chunkDelayMs: CHUNK_MS })),
  );
  const prefill = await startFakeAnthropic({ name: 'prefill', reply: REPLY, chunkDelayMs: CHUNK_MS });
  run.track({ stop: () => Promise.all([primary.close(), restart.close(), prefill.close()]).then(() => undefined) });
  primary.setMode('cutAfter', { count: CUT_AFTER });
  const config = join(run.tmp, 'continuation.yaml');
  const entry = (name: string, kind: string, url: string): string =>
    `  - { name: ${name}, kind: ${kind}, base_url: "${url}", api_key: x }`;
  writeFileSync(
    config,
    ['providers:', entry('primary', 'openai', primary.url), entry('restart', 'openai', restart.url)]
      .concat(entry('prefill', 'anthropic', prefill.url))
      .join('\n'),
  );
  const database = await run.createDatabase('continuation');
  const gateway = run.track(
    await startGateway({
      script: join(ROOT, 'dist/src/main.js'),
      logFile: join(run.tmp, 'continuation.log'),
      // every request breaks on the primary: its circuit must stay closed for the measurement
      env: gatewayEnv(database.url, config, { SVC_BREAKER_THRESHOLD: '1000000000', LOG_LEVEL: 'warn' }),
    }),
  );
  const keys = {
    restart: await createBenchKey(gateway.url, 'continued by restart', [
      { provider: 'primary', model: 'bench-model' },
      { provider: 'restart', model: 'bench-model' },
    ]),
    prefill: await createBenchKey(gateway.url, 'continued by prefill', [
      { provider: 'primary', model: 'bench-model' },
      { provider: 'prefill', model: 'bench-model' },
    ]),
  };
  const gaps = { restart: [] as number[], prefill: [] as number[] };
  let broken = 0;
  log(`continuation: ${REQUESTS} streams per mode, cut after ${CUT_AFTER} chunks, a chunk every ${CHUNK_MS} ms`);
  for (let i = 0; i < REQUESTS + 2; i++)
    for (const mode of ['restart', 'prefill'] as const) {
      const continued = await continuedGap(gateway.url, keys[mode]);
      if (!continued.whole || Number.isNaN(continued.gapMs)) broken += 1;
      else if (i >= 2) gaps[mode].push(continued.gapMs); // two warm-up rounds
    }
  const stats = (values: number[]): { p50: number; p99: number } => {
    const sorted = Float64Array.from(values).sort();
    return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
  };
  const rows: TargetRow[] = (['prefill', 'restart'] as const).map((mode) => {
    const { p50, p99 } = stats(gaps[mode]);
    return {
      figure: `continued stream's gap (break → first continued chunk), ${mode}`,
      value: `p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (${gaps[mode].length} streams)`,
      target: 'printed',
      pass: null,
    };
  });
  rows.push({
    figure: 'streams not answered whole, exactly once',
    value: String(broken),
    target: '0',
    pass: broken === 0,
  });
  reportTargets(
    RESULTS_FILE,
    'continuation',
    {
      title: 'Continued chat streams',
      script: 'bench/continuation.ts',
      machine: machine(),
      notes: [
        `- Gateway: \`node dist/src/main.js\`, chains \`[primary, restart]\` (openai kind) and \`[primary, prefill]\` (anthropic kind); the primary cuts every stream after ${CUT_AFTER} of 60 chunks; every fake upstream writes a chunk each ${CHUNK_MS} ms; c=1, the modes in turns, 2 warm-up rounds`,
        '- Gap: client time from the last chunk before the break to the chunk carrying `svc_continuation`; a restart regenerates the delivered chunks first (swallowed), a prefill asks only for the rest',
      ],
    },
    rows,
  );
});
