import { cpSync, existsSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { projectRoot } from '../src/common/paths';
import { parseFlacStreamInfo, parseWavHeader, pcmFrameCount, scanMp3Frames } from '../src/audio/parse';
import { cpuBetween, Roles, snapshot, waitForQuiet } from './cpu';
import { percentile, runLoad } from './load';
import type { LoadSpec } from './load';
import { ask, forkHelper, rssMb, startGateway, watchRss, BENCH_ADMIN_TOKEN } from './processes';
import type { Forked, GatewayProcess } from './processes';
import { bootSpeechGateway, isUrl, type BootedGateway } from './speech-gateway';
import { writeSection } from './results-file';
import { log, machine, Run, runBenchmark, secondsFromEnv } from './run';
import { EngineSpeed, FirstAudio, SpeechFigures, Startup, StreamsHeld, SyncCell } from './speech-figures';
import { renderSpeechChecks, renderSpeechResults, speechChecks } from './speech-report';
import type { SpeechUpstreamCounts } from './speech-upstream';
import { StreamSession } from './ws-session';

/**
 * `npm run bench:speech`: in one run, against the fake MiniMax in its own process and the built
 * gateway as a child process: sync speech latency through the gateway vs. the upstream direct,
 * WebSocket time to first audio through the gateway vs. the upstream direct, 1,000 concurrent
 * streams and the RSS each costs, the offline engine's real-time factor per format, and startup
 * time and idle RSS of a started service. Prints the figures and writes its section of bench/results.md.
 */

const ROOT = projectRoot();
const RESULTS_FILE = join(ROOT, 'bench/results.md');
const ADMIN_TOKEN = BENCH_ADMIN_TOKEN;
const MODEL = 'speech-02-hd';
const VOICE = 'male-qn-qingse';
const SPEECH_PATH = '/v1/audio/speech';
const STREAM_PATH = '/v1/audio/speech/stream';
/** One short sentence: a complete one, so the stream releases it at once. */
const TEXT = 'Hello there.';
const SYNC_BODY = JSON.stringify({ model: MODEL, text: TEXT, voice_setting: { voice_id: VOICE } });
const CONCURRENCY = [1, 10] as const;
/** The first entry is the default request, which the targets are checked on. */
const STREAM_FORMATS: Array<{ label: string; audio?: Record<string, unknown> }> = [
  { label: 'default (mp3, 32 kHz mono)' },
  { label: 'pcm, 16 kHz mono', audio: { format: 'pcm', sample_rate: 16000, channel: 1 } },
];
const ENGINE_TEXT =
  'The lighthouse keeper climbed the stairs before dawn and checked the lamp once more. ' +
  'Rain drummed on the tin roof while the children counted the seconds between thunder and lightning. ' +
  'Nobody expected the old ferry to cross the bay in under twenty minutes, yet it did. ' +
  'Markets opened slowly; traders watched the screens, sipped coffee and waited for news. ' +
  'In the spring the orchard turned white, and the bees arrived from three valleys away. ' +
  'Why would a careful engineer leave the bridge drawings on the kitchen table?';
const ENGINE_RUNS = 3;
/** Streams are spread over keys so that the per-key stream limit (default 100) stays as shipped. */
const STREAM_KEYS = 20;
const STREAM_OPEN_BATCH = 50;
const STREAM_HOLD_MS = 5000;
const STREAM_SAMPLE = 50;
const SETTLE_MS = 3000;
const STARTUP_BOOTS = 3;
const IDLE_SECONDS = 10;
const QUIET_CORES = 0.15;
const QUIET_WAIT_MS = 10000;

const WARMUP_SECONDS = secondsFromEnv('BENCH_WARMUP_SECONDS', 2);
const MEASURE_SECONDS = secondsFromEnv('BENCH_SECONDS', 10);

function countFromEnv(name: string, fallback: number, max: number): number {
  const raw = process.env[name];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value <= 0 || value > max)
    throw new Error(`${name} must be a whole number in 1..${max}`);
  return value;
}

const WS_SAMPLES = countFromEnv('BENCH_WS_SAMPLES', 200, 10000);
const STREAMS = countFromEnv('BENCH_STREAMS', 1000, 20000);

const isCounts = (m: unknown): m is { counts: SpeechUpstreamCounts } =>
  typeof m === 'object' && m !== null && 'counts' in m;
const isLast = (m: unknown): m is { last: unknown } => typeof m === 'object' && m !== null && 'last' in m;

type Upstream = Forked<{ url: string }>;

/**
 * A copy of dist as built for this run, under node_modules (so packages still resolve): `nest build` empties dist
 * first, and other builds of this checkout must not pull the service away while the run spawns gateways.
 */
function snapshotDist(run: Run): string {
  const copy = join(ROOT, 'node_modules', '.cache', `svc-bench-dist-${process.pid}`);
  cpSync(join(ROOT, 'dist'), copy, { recursive: true });
  run.track({ stop: () => Promise.resolve(rmSync(copy, { recursive: true, force: true })) });
  for (const file of ['src/main.js', 'bench/speech-upstream.js'])
    if (!existsSync(join(copy, file))) throw new Error(`dist/${file} is missing: is another build running?`);
  return copy;
}

/** The snapshot's main.js, set when the run starts. */
let gatewayScript = '';

/** A gateway of the snapshot's build with MiniMax (the fake) and the offline engine. */
const bootGateway = (run: Run, label: string, upstreamUrl: string): Promise<BootedGateway> =>
  bootSpeechGateway(run, label, upstreamUrl, gatewayScript);

/** Cores used by processes outside `roles` while `work` ran. */
async function timed<T>(roles: () => Roles, work: () => Promise<T>): Promise<{ value: T; otherCores: number }> {
  const { cores } = machine();
  const before = snapshot(roles());
  const value = await work();
  return { value, otherCores: cpuBetween(before, snapshot(roles()), cores).other };
}

/** The run's own processes: this one, the upstream, the gateway and the PostgreSQL backends serving its database. */
async function rolesOf(run: Run, upstream: Upstream, booted: BootedGateway): Promise<() => Roles> {
  const database = await run.backendPids(booted.database);
  return () => ({
    generator: [process.pid],
    upstream: upstream.child.pid === undefined ? [] : [upstream.child.pid],
    subject: [booted.gateway.pid],
    database,
  });
}

/** The body of the last T2A request the fake received: what the gateway really sends upstream. */
async function lastUpstreamBody(upstream: Upstream): Promise<string> {
  const { last } = await ask(upstream.child, 'last', isLast);
  if (!last) throw new Error('the upstream has seen no T2A request');
  return JSON.stringify(last);
}

async function speakOnce(
  url: string,
  secret: string,
  body: string,
): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const res = await fetch(`${url}${SPEECH_PATH}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body,
  });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

async function measureSync(run: Run, upstream: Upstream, booted: BootedGateway, secret: string): Promise<SyncCell[]> {
  const warm = await speakOnce(booted.gateway.url, secret, SYNC_BODY);
  if (warm.status !== 200 || warm.headers.get('x-svc-provider-used') !== 'minimax')
    throw new Error(`sync speech answered ${warm.status}: ${warm.bytes.toString().slice(0, 300)}`);
  const direct: LoadSpec = {
    url: `${upstream.ready.url}/t2a_v2`,
    headers: { authorization: 'Bearer x' },
    body: await lastUpstreamBody(upstream),
    connections: 1,
    seconds: 1,
  };
  const gateway: LoadSpec = {
    url: `${booted.gateway.url}${SPEECH_PATH}`,
    headers: { authorization: `Bearer ${secret}` },
    body: SYNC_BODY,
    connections: 1,
    seconds: 1,
    expectProvider: 'minimax',
  };
  const roles = await rolesOf(run, upstream, booted);
  const cells: SyncCell[] = [];
  for (const connections of CONCURRENCY) {
    for (const [target, spec] of [
      ['upstream direct', direct],
      ['gateway', gateway],
    ] as const) {
      await waitForQuiet(roles, machine().cores, QUIET_CORES, QUIET_WAIT_MS);
      await runLoad({ ...spec, connections, seconds: WARMUP_SECONDS });
      const { value: result, otherCores } = await timed(roles, () =>
        runLoad({ ...spec, connections, seconds: MEASURE_SECONDS }),
      );
      cells.push({ target, connections, result, otherCores });
      log(
        `  sync ${target} c=${connections}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms, ` +
          `non-2xx ${result.non2xx}, errors ${result.errors}, header mismatches ${result.headerMismatches}, other processes ${otherCores.toFixed(2)} cores`,
      );
    }
  }
  return cells;
}

const wsUrlOf = (gateway: GatewayProcess): string => `${gateway.url.replace(/^http/, 'ws')}${STREAM_PATH}`;

/** A started task: connected_success, task_start, task_started. */
async function startedSession(
  url: string,
  secret: string,
  audio: Record<string, unknown> | undefined,
): Promise<StreamSession> {
  const session = await StreamSession.open(url, { authorization: `Bearer ${secret}` });
  try {
    await session.until('connected_success');
    session.send({
      event: 'task_start',
      model: MODEL,
      voice_setting: { voice_id: VOICE },
      ...(audio ? { audio_setting: audio } : {}),
    });
    await session.until('task_started');
    return session;
  } catch (err) {
    session.ws.terminate();
    throw err;
  }
}

/** Milliseconds from sending the sentence to the first audio message, through the gateway. */
async function gatewayFirstAudio(
  url: string,
  secret: string,
  audio: Record<string, unknown> | undefined,
): Promise<number> {
  const session = await startedSession(url, secret, audio);
  const sent = performance.now();
  session.send({ event: 'task_continue', text: TEXT });
  const first = await session.until('task_continued');
  session.send({ event: 'task_finish' });
  await session.until('task_finished');
  await session.closed;
  return first.at - sent;
}

/** Milliseconds from sending the T2A request to the first whole SSE event carrying audio, straight to the upstream. */
async function directFirstAudio(pool: Pool, path: string, body: string): Promise<number> {
  const sent = performance.now();
  const res = await pool.request({
    method: 'POST',
    path,
    headers: { authorization: 'Bearer x', 'content-type': 'application/json' },
    body,
  });
  let first = Number.NaN;
  let pending = '';
  for await (const chunk of res.body) {
    if (!Number.isNaN(first)) continue; // read to the end so that the connection is reused
    pending += (chunk as Buffer).toString('latin1');
    let end = pending.indexOf('\n\n');
    while (end >= 0 && Number.isNaN(first)) {
      if (/"audio":"[0-9a-f]/.test(pending.slice(0, end))) first = performance.now() - sent;
      pending = pending.slice(end + 2);
      end = pending.indexOf('\n\n');
    }
  }
  if (res.statusCode !== 200 || Number.isNaN(first))
    throw new Error(`the upstream sent no audio event (HTTP ${res.statusCode})`);
  return first;
}

const quantiles = (values: number[]): { p50: number; p99: number } => {
  const sorted = Float64Array.from(values).sort();
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
};

async function measureFirstAudio(
  run: Run,
  upstream: Upstream,
  booted: BootedGateway,
  secret: string,
): Promise<FirstAudio[]> {
  const origin = new URL(upstream.ready.url);
  const path = `${origin.pathname}/t2a_v2`;
  const pool = new Pool(origin.origin, { connections: 1 });
  const url = wsUrlOf(booted.gateway);
  const roles = await rolesOf(run, upstream, booted);
  const results: FirstAudio[] = [];
  try {
    for (const { label, audio } of STREAM_FORMATS) {
      for (let i = 0; i < 5; i++) await gatewayFirstAudio(url, secret, audio);
      const body = await lastUpstreamBody(upstream);
      for (let i = 0; i < 5; i++) await directFirstAudio(pool, path, body);
      await waitForQuiet(roles, machine().cores, QUIET_CORES, QUIET_WAIT_MS);
      const { value, otherCores } = await timed(roles, async () => {
        const direct: number[] = [];
        const gateway: number[] = [];
        for (let i = 0; i < WS_SAMPLES; i++) {
          // alternate which goes first, so neither always runs right after the other
          if (i % 2 === 0) direct.push(await directFirstAudio(pool, path, body));
          gateway.push(await gatewayFirstAudio(url, secret, audio));
          if (i % 2 === 1) direct.push(await directFirstAudio(pool, path, body));
        }
        return { direct: quantiles(direct), gateway: quantiles(gateway) };
      });
      results.push({ format: label, samples: WS_SAMPLES, ...value, otherCores });
      log(
        `  first audio (${label}): upstream direct p50 ${value.direct.p50.toFixed(2)} ms p99 ${value.direct.p99.toFixed(2)} ms; ` +
          `gateway p50 ${value.gateway.p50.toFixed(2)} ms p99 ${value.gateway.p99.toFixed(2)} ms; other processes ${otherCores.toFixed(2)} cores`,
      );
    }
  } finally {
    await pool.close();
  }
  return results;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

/** RSS in MB, the median of a few samples (one sample can catch a GC mid-way). */
async function steadyRss(pid: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(rssMb(pid) ?? Number.NaN);
    await sleep(200);
  }
  return median(samples);
}

async function holdStreams(
  run: Run,
  upstream: Upstream,
  index: number,
  format: (typeof STREAM_FORMATS)[number],
): Promise<StreamsHeld> {
  const booted = await bootGateway(run, `streams-${index}`, upstream.ready.url);
  const secrets = await Promise.all(
    Array.from({ length: STREAM_KEYS }, (_, i) =>
      booted.createKey(`streams ${i}`, [{ provider: 'minimax', model: MODEL }]),
    ),
  );
  const url = wsUrlOf(booted.gateway);
  // warm the path (first upgrade, key lookups, encoder modules) before the baseline
  for (const secret of secrets) {
    const session = await startedSession(url, secret, format.audio);
    await session.close();
  }
  await sleep(SETTLE_MS);
  const roles = await rolesOf(run, upstream, booted);
  const { value, otherCores } = await timed(roles, async () => {
    const rssBeforeMb = await steadyRss(booted.gateway.pid);
    const peak = watchRss(booted.gateway.pid);
    const sessions: StreamSession[] = [];
    const errors: string[] = [];
    const opening = performance.now();
    for (let from = 0; from < STREAMS; from += STREAM_OPEN_BATCH) {
      const batch = Array.from({ length: Math.min(STREAM_OPEN_BATCH, STREAMS - from) }, (_, i) =>
        startedSession(url, secrets[(from + i) % STREAM_KEYS], format.audio),
      );
      for (const outcome of await Promise.allSettled(batch)) {
        if (outcome.status === 'fulfilled') sessions.push(outcome.value);
        else errors.push((outcome.reason as Error).message);
      }
    }
    const openSeconds = (performance.now() - opening) / 1000;
    await sleep(SETTLE_MS);
    const rssWithMb = await steadyRss(booted.gateway.pid);
    await sleep(STREAM_HOLD_MS);
    const held = sessions.filter((s) => s.closeCode === null);
    // a sample of the held streams must still work: a sentence in, audio out, task_finished
    const sample = held
      .filter((_, i) => i % Math.max(1, Math.floor(held.length / STREAM_SAMPLE)) === 0)
      .slice(0, STREAM_SAMPLE);
    const spoke = await Promise.allSettled(
      sample.map(async (s) => {
        s.send({ event: 'task_continue', text: TEXT });
        s.send({ event: 'task_finish' });
        await s.until('task_finished', 60000);
      }),
    );
    const working = spoke.filter((o) => o.status === 'fulfilled').length;
    for (const o of spoke) if (o.status === 'rejected') errors.push(`sample: ${(o.reason as Error).message}`);
    const peakRssMb = peak.stop();
    await Promise.all(sessions.map((s) => s.close()));
    return {
      format: format.label,
      attempted: STREAMS,
      opened: sessions.length,
      held: held.length,
      working,
      sampled: sample.length,
      openSeconds,
      rssBeforeMb,
      rssWithMb,
      peakRssMb,
      perStreamKb: held.length > 0 ? ((rssWithMb - rssBeforeMb) * 1024) / held.length : Number.NaN,
      errors,
    };
  });
  await booted.gateway.stop();
  log(
    `  streams (${format.label}): ${value.held} of ${value.attempted} held, ${value.working}/${value.sampled} sampled spoke, opened in ${value.openSeconds.toFixed(1)} s, ` +
      `RSS ${value.rssBeforeMb.toFixed(0)} -> ${value.rssWithMb.toFixed(0)} MB (peak ${value.peakRssMb.toFixed(0)}), ${value.perStreamKb.toFixed(0)} KB per stream, ` +
      `other processes ${otherCores.toFixed(2)} cores${value.errors.length ? `; ${value.errors.length} errors, first: ${value.errors[0]}` : ''}`,
  );
  return { ...value, otherCores };
}

/** Seconds of audio in `bytes` of `format` (32 kHz mono unless the bytes say); null when the container does not say. */
function audioSeconds(format: string, bytes: Buffer): number | null {
  switch (format) {
    case 'mp3':
      return scanMp3Frames(bytes).durationSeconds;
    case 'wav': {
      const wav = parseWavHeader(bytes);
      return pcmFrameCount(wav.dataLength, wav.channels) / wav.sampleRate;
    }
    case 'pcm':
      return pcmFrameCount(bytes.length, 1) / 32000;
    case 'flac': {
      const info = parseFlacStreamInfo(bytes);
      return info.totalSamples > 0 ? info.totalSamples / info.sampleRate : null;
    }
    default:
      throw new Error(`no parser for ${format}`);
  }
}

async function measureEngine(
  run: Run,
  upstream: Upstream,
  booted: BootedGateway,
  secret: string,
): Promise<EngineSpeed[]> {
  const roles = await rolesOf(run, upstream, booted);
  const results: EngineSpeed[] = [];
  const speak = async (format: string): Promise<{ wall: number; bytes: Buffer }> => {
    const started = performance.now();
    const res = await speakOnce(
      booted.gateway.url,
      secret,
      JSON.stringify({
        model: MODEL,
        text: ENGINE_TEXT,
        voice_setting: { voice_id: 'en-us' },
        audio_setting: { format },
      }),
    );
    const wall = (performance.now() - started) / 1000;
    if (res.status !== 200 || res.headers.get('x-svc-provider-used') !== 'espeak')
      throw new Error(`offline speech (${format}) answered ${res.status}: ${res.bytes.toString().slice(0, 300)}`);
    return { wall, bytes: res.bytes };
  };
  let pcmSeconds = Number.NaN;
  for (const format of ['pcm', 'wav', 'flac', 'mp3']) {
    await speak(format);
    await waitForQuiet(roles, machine().cores, QUIET_CORES, QUIET_WAIT_MS);
    const { value: runs, otherCores } = await timed(roles, async () => {
      const list: Array<{ wall: number; bytes: Buffer }> = [];
      for (let i = 0; i < ENGINE_RUNS; i++) list.push(await speak(format));
      return list;
    });
    const bytes = runs[0].bytes;
    const parsed = audioSeconds(format, bytes);
    if (format === 'pcm' && parsed !== null) pcmSeconds = parsed;
    // a streamed FLAC's STREAMINFO leaves the length unknown: the engine is deterministic, so the pcm run's length is this one's
    const seconds = parsed ?? pcmSeconds;
    const wallSeconds = median(runs.map((r) => r.wall));
    const lengthFrom =
      parsed !== null
        ? format === 'mp3'
          ? 'MP3 frames'
          : format === 'wav'
            ? 'WAV header'
            : format === 'pcm'
              ? 'PCM byte count'
              : 'FLAC STREAMINFO'
        : 'the pcm run (STREAMINFO length 0)';
    results.push({
      format,
      audioSeconds: seconds,
      wallSeconds,
      rtf: seconds / wallSeconds,
      bytes: bytes.length,
      lengthFrom,
      otherCores,
    });
    log(
      `  offline engine ${format}: ${seconds.toFixed(1)} s of audio in ${wallSeconds.toFixed(3)} s (median of ${ENGINE_RUNS}) = ${(seconds / wallSeconds).toFixed(1)}x real time`,
    );
  }
  return results;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Startup to ready on a migrated database with the default config, and the idle RSS of the started service. */
async function measureStartup(run: Run): Promise<Startup> {
  const database = await run.createDatabase('startup');
  const env = (port: string): Record<string, string> => ({
    DATABASE_URL: database.url,
    PORT: port,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    SVC_ADMIN_TOKEN: ADMIN_TOKEN,
  });
  // the first boot migrates the fresh database
  const first = run.track(
    await startGateway({ script: gatewayScript, logFile: join(run.tmp, 'startup-0.log'), env: env('0') }),
  );
  await first.stop();

  const bootsMs: number[] = [];
  let probe = '/readyz';
  let idleRssMb = Number.NaN;
  let rssAtReadyMb = Number.NaN;
  for (let boot = 1; boot <= STARTUP_BOOTS; boot++) {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const spawned = performance.now();
    const starting = startGateway({
      script: gatewayScript,
      logFile: join(run.tmp, `startup-${boot}.log`),
      env: env(String(port)),
    });
    starting.catch(() => undefined); // awaited below; a failed boot must not count as an unhandled rejection meanwhile
    let readyMs = Number.NaN;
    while (Number.isNaN(readyMs) && performance.now() - spawned < 60000) {
      try {
        const res = await fetch(`${base}/readyz`);
        await res.arrayBuffer();
        if (res.status === 200) readyMs = performance.now() - spawned;
        else if (res.status === 404) {
          // a build without the readiness probe: its first HTTP answer is the best there is
          probe = 'any HTTP answer (this build has no /readyz)';
          readyMs = performance.now() - spawned;
        }
      } catch {
        // not listening yet
      }
      if (Number.isNaN(readyMs)) await sleep(10);
    }
    const gateway = run.track(await starting);
    if (Number.isNaN(readyMs)) throw new Error(`boot ${boot} was not ready within 60 s`);
    bootsMs.push(readyMs);
    log(`  boot ${boot}: ready after ${readyMs.toFixed(0)} ms`);
    if (boot === STARTUP_BOOTS) {
      rssAtReadyMb = rssMb(gateway.pid) ?? Number.NaN;
      await sleep(IDLE_SECONDS * 1000);
      idleRssMb = await steadyRss(gateway.pid);
      log(
        `  idle RSS ${IDLE_SECONDS} s after ready: ${idleRssMb.toFixed(0)} MB (${rssAtReadyMb.toFixed(0)} MB at ready)`,
      );
    }
    await gateway.stop();
  }
  return { bootsMs, medianMs: median(bootsMs), probe, idleRssMb, idleAfterSeconds: IDLE_SECONDS, rssAtReadyMb };
}

async function benchmark(run: Run): Promise<void> {
  const loadAtStart = loadavg()[0];
  const dist = snapshotDist(run);
  gatewayScript = join(dist, 'src/main.js');
  const upstream = run.track(await forkHelper(join(dist, 'bench/speech-upstream.js'), [], isUrl));
  log(`upstream: fake MiniMax at ${upstream.ready.url}`);

  log('startup and idle RSS (default config/gateway.yaml)');
  const startup = await measureStartup(run);

  const main = await bootGateway(run, 'speech', upstream.ready.url);
  const secret = await main.createKey('bench speech', [{ provider: 'minimax', model: MODEL }]);
  const offline = await main.createKey('bench offline', [{ provider: 'espeak', model: MODEL }]);

  log('sync speech');
  const sync = await measureSync(run, upstream, main, secret);
  log('WebSocket time to first audio');
  const firstAudio = await measureFirstAudio(run, upstream, main, secret);
  log('offline engine real-time factor');
  const engine = await measureEngine(run, upstream, main, offline);
  const { counts } = await ask(upstream.child, 'counts', isCounts);
  await main.gateway.stop();

  log(`concurrent WebSocket streams (${STREAMS})`);
  const streams: StreamsHeld[] = [];
  for (const [i, format] of STREAM_FORMATS.entries()) streams.push(await holdStreams(run, upstream, i, format));

  const figures: SpeechFigures = { sync, firstAudio, streams, engine, startup };
  const rows = speechChecks(figures);
  const info = {
    date: new Date().toISOString(),
    loadAverage: [loadAtStart, loadavg()[0]] as [number, number],
    ...machine(),
    node: process.version,
    warmupSeconds: WARMUP_SECONDS,
    seconds: MEASURE_SECONDS,
  };
  writeSection(
    RESULTS_FILE,
    'speech',
    renderSpeechResults(
      info,
      { syncBody: SYNC_BODY, wsText: TEXT, engineChars: ENGINE_TEXT.length, streamKeys: STREAM_KEYS },
      figures,
      rows,
    ),
  );
  process.stdout.write(
    `\n${renderSpeechChecks(rows)}\n\n(${counts.t2a} T2A requests reached the fake upstream before the stream runs)\nwritten to ${RESULTS_FILE}\n`,
  );
}

runBenchmark('bench:speech', benchmark);
