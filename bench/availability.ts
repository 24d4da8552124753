import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { projectRoot } from '../src/common/paths';
import { runLoad, type LoadResult } from './load';
import { forkHelper, startGateway, type GatewayProcess } from './processes';
import { renderTargetTable, writeSection, type TargetRow } from './results-file';
import { log, machine, Run, runBenchmark, secondsFromEnv } from './run';
import type { UpstreamUrls } from './upstream';

/**
 * `npm run bench:availability`: does heavy speech stall the gateway? The built gateway runs with its chat
 * step on the fake OpenAI and the offline engine; the event-loop lag p99 (prom-client's, read from
 * /metrics) and the chat one-step p99 at c=20 are measured twice, once with no speech and once while one
 * client runs 10,000-character mp3 44.1 kHz stereo syntheses back to back. Writes its section of bench/results.md.
 */

const ROOT = projectRoot();
const GATEWAY_SCRIPT = join(ROOT, 'dist/src/main.js');
const RESULTS_FILE = join(ROOT, 'bench/results.md');
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
const CHAT_MODEL = 'bench-model';
const CHAT_BODY = JSON.stringify({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'hi' }] });
const PROSE = 'The lighthouse keeper climbed the stairs before dawn and checked the lamp once more. ';
const SPEECH_BODY = JSON.stringify({
  model: 'speech-02-hd',
  text: PROSE.repeat(Math.floor(10_000 / PROSE.length)),
  voice_setting: { voice_id: 'en-us' },
  audio_setting: { format: 'mp3', sample_rate: 44100, channel: 2 },
});
const CONNECTIONS = 20;
const LAG_TARGET_MS = 20;
const CHAT_P99_TARGET_MS = 15;
/** Heavy speech may cost at most this factor over the idle figure. */
const ALLOWED_FACTOR = 2;

const WARMUP_SECONDS = secondsFromEnv('BENCH_WARMUP_SECONDS', 2);
const MEASURE_SECONDS = secondsFromEnv('BENCH_SECONDS', 10);

const isUrls = (m: unknown): m is { urls: UpstreamUrls } => typeof m === 'object' && m !== null && 'urls' in m;

interface Window {
  chat: LoadResult;
  /** prom-client's p99 and max of the event-loop delay over the window (its histogram resets at each scrape). */
  lagP99: number;
  lagMax: number;
}

async function scrape(url: string): Promise<string> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return res.text();
}

function gauge(text: string, name: string): number {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text);
  if (!match) throw new Error(`/metrics has no ${name}`);
  return Number(match[1]);
}

async function measureWindow(gateway: GatewayProcess, secret: string): Promise<Window> {
  const spec = { url: `${gateway.url}/v1/chat/completions`, headers: { authorization: `Bearer ${secret}` }, body: CHAT_BODY, connections: CONNECTIONS, expectProvider: 'primary' };
  await runLoad({ ...spec, seconds: WARMUP_SECONDS });
  await scrape(gateway.url); // starts the lag window
  const chat = await runLoad({ ...spec, seconds: MEASURE_SECONDS });
  const text = await scrape(gateway.url);
  return { chat, lagP99: gauge(text, 'nodejs_eventloop_lag_p99_seconds') * 1000, lagMax: gauge(text, 'nodejs_eventloop_lag_max_seconds') * 1000 };
}

/** One client's back-to-back syntheses until stopped; counts what finished and how much audio came. */
function speechLoop(url: string, secret: string): { stop(): Promise<{ requests: number; failures: number; bytes: number }> } {
  const controller = new AbortController();
  const stats = { requests: 0, failures: 0, bytes: 0 };
  const loop = (async () => {
    while (!controller.signal.aborted) {
      try {
        const res = await fetch(`${url}/v1/audio/speech`, {
          method: 'POST',
          headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
          body: SPEECH_BODY,
          signal: controller.signal,
        });
        const bytes = (await res.arrayBuffer()).byteLength;
        stats.bytes += bytes;
        if (res.status === 200) stats.requests += 1;
        else stats.failures += 1;
      } catch {
        if (!controller.signal.aborted) stats.failures += 1;
      }
    }
  })();
  return {
    stop: async () => {
      controller.abort();
      await loop;
      return stats;
    },
  };
}

async function benchmark(run: Run): Promise<void> {
  const upstream = run.track(await forkHelper(join(__dirname, 'upstream.js'), [], isUrls));
  const config = join(run.tmp, 'gateway-availability.yaml');
  writeFileSync(config, `providers:\n  - name: primary\n    kind: openai\n    base_url: ${upstream.ready.urls.ok}\n    api_key: x\n  - name: espeak\n    kind: espeak\n`);
  const database = await run.createDatabase('availability');
  const gateway = run.track(
    await startGateway({
      script: GATEWAY_SCRIPT,
      logFile: join(run.tmp, 'gateway-availability.log'),
      env: { DATABASE_URL: database.url, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', SVC_ADMIN_TOKEN: ADMIN_TOKEN, SVC_CONFIG: config, SVC_DEMO_KEY: 'false' },
    }),
  );
  const key = async (name: string, chain: object[]): Promise<string> => {
    const res = await fetch(`${gateway.url}/v1/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name, chain }),
    });
    const body = (await res.json()) as { secret?: string };
    if (res.status !== 201 || !body.secret) throw new Error(`key creation failed: ${res.status} ${JSON.stringify(body)}`);
    return body.secret;
  };
  const chatSecret = await key('availability chat', [{ provider: 'primary', model: CHAT_MODEL }]);
  const speechSecret = await key('availability speech', [{ provider: 'espeak', model: 'speech-02-hd' }]);
  const loadAtStart = loadavg()[0];

  log(`idle: chat one step at c=${CONNECTIONS} for ${MEASURE_SECONDS} s, no speech`);
  const idle = await measureWindow(gateway, chatSecret);
  log(`  chat p99 ${idle.chat.p99.toFixed(2)} ms, event-loop lag p99 ${idle.lagP99.toFixed(2)} ms`);

  log('loaded: the same while one client runs 10,000-character mp3 44.1 kHz stereo syntheses back to back');
  const speech = speechLoop(gateway.url, speechSecret);
  const started = performance.now();
  await sleep(2000); // the first synthesis is under way in a worker
  const loaded = await measureWindow(gateway, chatSecret);
  const workers = gauge(await scrape(gateway.url), 'svc_audio_workers_alive');
  const speechStats = await speech.stop();
  const speechSeconds = (performance.now() - started) / 1000;
  log(`  chat p99 ${loaded.chat.p99.toFixed(2)} ms, event-loop lag p99 ${loaded.lagP99.toFixed(2)} ms; speech ${speechStats.requests} done, ${(speechStats.bytes / 1e6).toFixed(1)} MB`);

  const within = (value: number, idleValue: number, target: number): boolean => value <= target && value <= Math.max(idleValue * ALLOWED_FACTOR, idleValue + 1);
  const rows: TargetRow[] = [
    {
      figure: 'event-loop lag p99 while heavy speech runs',
      value: `${loaded.lagP99.toFixed(2)} ms (idle ${idle.lagP99.toFixed(2)} ms; max ${loaded.lagMax.toFixed(1)} vs ${idle.lagMax.toFixed(1)} ms)`,
      target: `<= ${LAG_TARGET_MS} ms and <= ${ALLOWED_FACTOR}x idle`,
      pass: within(loaded.lagP99, idle.lagP99, LAG_TARGET_MS),
    },
    {
      figure: `chat one step p99 at c=${CONNECTIONS} while heavy speech runs`,
      value: `${loaded.chat.p99.toFixed(2)} ms (idle ${idle.chat.p99.toFixed(2)} ms; ${loaded.chat.rps.toFixed(0)} vs ${idle.chat.rps.toFixed(0)} req/s)`,
      target: `<= ${CHAT_P99_TARGET_MS} ms and <= ${ALLOWED_FACTOR}x idle`,
      pass: within(loaded.chat.p99, idle.chat.p99, CHAT_P99_TARGET_MS),
    },
    {
      figure: 'chat responses: non-2xx, errors, header mismatches (both windows)',
      value: `${idle.chat.non2xx + loaded.chat.non2xx}, ${idle.chat.errors + loaded.chat.errors}, ${idle.chat.headerMismatches + loaded.chat.headerMismatches}`,
      target: '0, 0, 0',
      pass: idle.chat.non2xx + loaded.chat.non2xx + idle.chat.errors + loaded.chat.errors + idle.chat.headerMismatches + loaded.chat.headerMismatches === 0,
    },
    {
      figure: 'heavy speech during the loaded window',
      value: `${speechStats.requests} finished, ${speechStats.failures} failed, ${(speechStats.bytes / 1e6).toFixed(1)} MB of mp3 in ${speechSeconds.toFixed(0)} s; ${workers} audio worker(s)`,
      target: '-',
      pass: null,
    },
  ];
  const { cores, cpu } = machine();
  const table = renderTargetTable(rows);
  const body = [
    '## Availability under heavy speech',
    '',
    'Written by `npm run bench:availability` (bench/availability.ts).',
    '',
    `- Date: ${new Date().toISOString()}`,
    `- Cores (\`nproc\`): ${cores} (${cpu.split(' ').slice(0, 2).join(' ')}); Node ${process.version}; 1-minute load average ${loadAtStart.toFixed(1)} at the start (the machine is shared)`,
    '- Gateway: `node dist/src/main.js` as deployed (default `SVC_AUDIO_WORKERS`: one less than the cores), a fresh PostgreSQL database,',
    '  chat key `[primary]` on the fake OpenAI in its own process, speech key `[espeak]`',
    `- Each window: ${WARMUP_SECONDS} s chat warm-up, then ${MEASURE_SECONDS} s of chat one step at c=${CONNECTIONS} (autocannon, keep-alive); the event-loop`,
    '  lag is prom-client\'s `nodejs_eventloop_lag_p99_seconds` from /metrics, scraped at the start and the end of the window (each scrape resets it)',
    '- Loaded window: one client sends `POST /v1/audio/speech` with 10,000 characters of English, mp3 44.1 kHz stereo, back to back, reading each answer whole',
    '',
    table,
  ].join('\n');
  process.stdout.write(`\n${table}\n`);
  writeSection(RESULTS_FILE, 'availability', body);
  log(`wrote the availability section of ${RESULTS_FILE}`);
}

// exits 0 whenever the run completed, targets met or not (a miss is a result, not a broken run)
runBenchmark('bench:availability', benchmark);
