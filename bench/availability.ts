import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { projectRoot } from '../src/common/paths';
import { runLoad, type LoadResult } from './load';
import {
  createBenchKey,
  forkHelper,
  startGateway,
  type GatewayProcess,
  BENCH_ADMIN_TOKEN,
  gatewayEnv,
} from './processes';
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
const ADMIN_TOKEN = BENCH_ADMIN_TOKEN;
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

const WARMUP_SECONDS = secondsFromEnv('BENCH_WARMUP_SECONDS', 1);
/** Each round measures idle then loaded, so both see the same load from the rest of the (shared) machine. */
const ROUNDS = 3;
const ROUND_SECONDS = secondsFromEnv('BENCH_ROUND_SECONDS', 5);

const isUrls = (m: unknown): m is { urls: UpstreamUrls } => typeof m === 'object' && m !== null && 'urls' in m;

/** prom-client's p99 and max of the event-loop delay over a window (its histogram resets at each scrape), and the pool's running jobs at its end. */
interface Lag {
  p99: number;
  max: number;
  audioJobs: number;
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

/** The event-loop lag over a round with nothing else sent: what the speech alone does to the loop. */
async function measureLag(gateway: GatewayProcess): Promise<Lag> {
  await scrape(gateway.url); // starts the window
  await sleep(ROUND_SECONDS * 1000);
  const text = await scrape(gateway.url);
  return {
    p99: gauge(text, 'nodejs_eventloop_lag_p99_seconds') * 1000,
    max: gauge(text, 'nodejs_eventloop_lag_max_seconds') * 1000,
    audioJobs: gauge(text, 'svc_audio_pool_jobs\\{state="running"\\}'),
  };
}

async function measureChat(gateway: GatewayProcess, secret: string): Promise<LoadResult> {
  const spec = {
    url: `${gateway.url}/v1/chat/completions`,
    headers: { authorization: `Bearer ${secret}` },
    body: CHAT_BODY,
    connections: CONNECTIONS,
    expectProvider: 'primary',
  };
  await runLoad({ ...spec, seconds: WARMUP_SECONDS });
  return runLoad({ ...spec, seconds: ROUND_SECONDS });
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

interface Condition {
  lag: Lag[];
  chat: LoadResult[];
}

/** One client's back-to-back syntheses until stopped; counts what finished and how much audio came. */
function speechLoop(
  url: string,
  secret: string,
): { stop(): Promise<{ requests: number; failures: number; bytes: number }> } {
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
        // counted as it streams: the request still running when the loop stops counts too
        for await (const chunk of res.body ?? []) stats.bytes += (chunk as Uint8Array).byteLength;
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
  writeFileSync(
    config,
    `providers:\n  - name: primary\n    kind: openai\n    base_url: ${upstream.ready.urls.ok}\n    api_key: x\n  - name: espeak\n    kind: espeak\n`,
  );
  const database = await run.createDatabase('availability');
  const gateway = run.track(
    await startGateway({
      script: GATEWAY_SCRIPT,
      logFile: join(run.tmp, 'gateway-availability.log'),
      env: gatewayEnv(database.url, config),
    }),
  );
  const key = (name: string, chain: Array<{ provider: string; model: string }>): Promise<string> =>
    createBenchKey(gateway.url, name, chain);
  const chatSecret = await key('availability chat', [{ provider: 'primary', model: CHAT_MODEL }]);
  const speechSecret = await key('availability speech', [{ provider: 'espeak', model: 'speech-02-hd' }]);
  const loadAtStart = loadavg()[0];

  const idle: Condition = { lag: [], chat: [] };
  const loaded: Condition = { lag: [], chat: [] };
  const speechStats = { requests: 0, failures: 0, bytes: 0 };
  let busyAtEnd = Infinity;
  let workers = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    log(
      `round ${round}/${ROUNDS}: idle, then while one client runs 10,000-character mp3 44.1 kHz stereo syntheses back to back`,
    );
    idle.lag.push(await measureLag(gateway));
    idle.chat.push(await measureChat(gateway, chatSecret));
    const speech = speechLoop(gateway.url, speechSecret);
    await sleep(1500); // the synthesis is under way in a worker
    loaded.lag.push(await measureLag(gateway));
    loaded.chat.push(await measureChat(gateway, chatSecret));
    const end = await scrape(gateway.url);
    busyAtEnd = Math.min(busyAtEnd, gauge(end, 'svc_audio_pool_jobs\\{state="running"\\}'));
    workers = gauge(end, 'svc_audio_workers_alive');
    const stats = await speech.stop();
    for (const k of ['requests', 'failures', 'bytes'] as const) speechStats[k] += stats[k];
    log(
      `  lag p99 ${idle.lag[round - 1].p99.toFixed(2)} -> ${loaded.lag[round - 1].p99.toFixed(2)} ms; chat p99 ${idle.chat[round - 1].p99.toFixed(2)} -> ${loaded.chat[round - 1].p99.toFixed(2)} ms`,
    );
  }
  const idleLag = {
    p99: median(idle.lag.map((l) => l.p99)),
    max: Math.max(...idle.lag.map((l) => l.max)),
    audioJobs: Math.max(...idle.lag.map((l) => l.audioJobs)),
  };
  const loadedLag = {
    p99: median(loaded.lag.map((l) => l.p99)),
    max: Math.max(...loaded.lag.map((l) => l.max)),
    audioJobs: Math.min(...loaded.lag.map((l) => l.audioJobs)),
  };
  const sum = (results: LoadResult[], k: 'non2xx' | 'errors' | 'headerMismatches'): number =>
    results.reduce((total, r) => total + r[k], 0);
  const idleChat = {
    p99: median(idle.chat.map((c) => c.p99)),
    rps: median(idle.chat.map((c) => c.rps)),
    non2xx: sum(idle.chat, 'non2xx'),
    errors: sum(idle.chat, 'errors'),
    headerMismatches: sum(idle.chat, 'headerMismatches'),
  };
  const loadedChat = {
    p99: median(loaded.chat.map((c) => c.p99)),
    rps: median(loaded.chat.map((c) => c.rps)),
    non2xx: sum(loaded.chat, 'non2xx'),
    errors: sum(loaded.chat, 'errors'),
    headerMismatches: sum(loaded.chat, 'headerMismatches'),
  };
  const speechSeconds = ROUNDS * (1.5 + 2 * ROUND_SECONDS + WARMUP_SECONDS);

  const ratio = (loaded: number, idle: number): string => `${(loaded / idle).toFixed(2)}x`;
  const rows: TargetRow[] = [
    {
      figure: 'event-loop lag p99 while heavy speech runs, against idle',
      value: `${ratio(loadedLag.p99, idleLag.p99)} (${loadedLag.p99.toFixed(2)} vs ${idleLag.p99.toFixed(2)} ms; max ${loadedLag.max.toFixed(1)} vs ${idleLag.max.toFixed(1)} ms)`,
      target: `<= ${ALLOWED_FACTOR}x`,
      pass: loadedLag.p99 <= idleLag.p99 * ALLOWED_FACTOR,
    },
    {
      figure: 'event-loop lag p99 while heavy speech runs',
      value: `${loadedLag.p99.toFixed(2)} ms`,
      target: `<= ${LAG_TARGET_MS} ms`,
      pass: loadedLag.p99 <= LAG_TARGET_MS,
    },
    {
      figure: `chat one step p99 at c=${CONNECTIONS} while heavy speech runs, against idle`,
      value: `${ratio(loadedChat.p99, idleChat.p99)} (${loadedChat.p99.toFixed(2)} vs ${idleChat.p99.toFixed(2)} ms; ${loadedChat.rps.toFixed(0)} vs ${idleChat.rps.toFixed(0)} req/s)`,
      target: `<= ${ALLOWED_FACTOR}x`,
      pass: loadedChat.p99 <= idleChat.p99 * ALLOWED_FACTOR,
    },
    {
      figure: `chat one step p99 at c=${CONNECTIONS} while heavy speech runs`,
      value: `${loadedChat.p99.toFixed(2)} ms`,
      target: `<= ${CHAT_P99_TARGET_MS} ms`,
      pass: loadedChat.p99 <= CHAT_P99_TARGET_MS,
    },
    {
      figure: 'chat responses: non-2xx, errors, header mismatches (both windows)',
      value: `${idleChat.non2xx + loadedChat.non2xx}, ${idleChat.errors + loadedChat.errors}, ${idleChat.headerMismatches + loadedChat.headerMismatches}`,
      target: '0, 0, 0',
      pass:
        idleChat.non2xx +
          loadedChat.non2xx +
          idleChat.errors +
          loadedChat.errors +
          idleChat.headerMismatches +
          loadedChat.headerMismatches ===
        0,
    },
    {
      figure: 'a synthesis ran through every loaded window (fewest audio jobs running at the end of a window)',
      value: `${Math.min(loadedLag.audioJobs, busyAtEnd)} (idle windows: at most ${idleLag.audioJobs})`,
      target: '>= 1 (idle 0)',
      pass: loadedLag.audioJobs >= 1 && busyAtEnd >= 1 && idleLag.audioJobs === 0,
    },
    {
      figure: 'heavy speech during the loaded windows',
      value: `${speechStats.requests} finished, ${speechStats.failures} failed, ${(speechStats.bytes / 1e6).toFixed(1)} MB of mp3 streamed in about ${speechSeconds.toFixed(0)} s; ${workers} audio worker(s)`,
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
    `- ${ROUNDS} rounds, each idle then loaded (so both see the same load from the rest of the shared machine); figures are the median over the rounds`,
    `- Lag window: ${ROUND_SECONDS} s with no other request; the lag is prom-client's \`nodejs_eventloop_lag_p99_seconds\` (10 ms timer resolution) from /metrics,`,
    '  scraped at the start and the end of the window (each scrape resets it)',
    `- Chat window: ${WARMUP_SECONDS} s warm-up, then ${ROUND_SECONDS} s of chat one step at c=${CONNECTIONS} (autocannon, keep-alive; every response must name \`primary\`)`,
    '- Loaded windows: one client sends `POST /v1/audio/speech` with 10,000 characters of English, mp3 44.1 kHz stereo, back to back, reading each answer as it',
    "  streams (started 1.5 s before the round's loaded windows, stopped after them); audio workers run at nice 19",
    '',
    table,
  ].join('\n');
  process.stdout.write(`\n${table}\n`);
  writeSection(RESULTS_FILE, 'availability', body);
  log(`wrote the availability section of ${RESULTS_FILE}`);
}

// exits 0 whenever the run completed, targets met or not (a miss is a result, not a broken run)
runBenchmark('bench:availability', benchmark);
