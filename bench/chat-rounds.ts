import { join } from 'node:path';
import { bootGateway, CHAT_BODY, CHAT_PATH, MODES, STREAM_BODY } from './chat-modes';
import type { BootedGateway, ModeName } from './chat-modes';
import { isProxyUrl } from './chat-measure';
import { measureFirstByte } from './first-byte';
import { IN_RUNS, pairedRequests } from './paired';
import type { PairedTarget } from './paired';
import { runLoad } from './load';
import { LOGGED_PROXY_SECRET } from './logged-proxy';
import { forkHelper } from './processes';
import type { Forked } from './processes';
import type { Rounds } from './report';
import { log, Run, secondsFromEnv } from './run';
import type { UpstreamUrls } from './upstream';

/**
 * Every ratio target in short interleaved rounds: the references and the gateway modes all running,
 * each entry measured for ROUND_SECONDS in turn, so a slow spell of the shared host falls on both sides
 * of a ratio. The two sides of each target ratio are measured back to back (or one entry apart), and
 * every other round runs the order backwards, so a drift of the host's speed within a round favours
 * neither side. Entries are named `<target>` (c=20), `<target> c=1`, or `<target> first byte` (the time
 * to the first SSE event at c=1).
 */

/**
 * The order of a round: each target's two sides next to each other (circuit open and streaming beside
 * what they are compared with, failover one entry from one step; a baseline build's entry beside this
 * build's); names absent from a run (the baseline's without BENCH_BASELINE) are left out.
 */
const ROUND_ORDER = [
  'bare proxy',
  'bare proxy chunked',
  'gateway one step',
  'gateway circuit open, one-step process',
  'gateway circuit open',
  'gateway failover',
  'baseline failover',
  'logged failover',
  'logged proxy',
  'baseline one step',
  'bare stream proxy',
  'gateway stream',
  'logged stream proxy',
  'baseline stream',
  'bare stream proxy first byte',
  'gateway stream first byte',
  'logged stream proxy first byte',
  'baseline stream first byte',
  'logged proxy c=1',
  'bare proxy c=1',
  'upstream direct c=1',
  'gateway one step c=1',
  'gateway circuit open, one-step process c=1',
  'gateway circuit open c=1',
  'gateway failover c=1',
  'baseline failover c=1',
  'baseline one step c=1',
];

/** The entries in ROUND_ORDER, forwards on even rounds and backwards on odd ones. */
export function roundOrder<T extends { name: string }>(entries: T[], round: number): T[] {
  const rank = (name: string): number => {
    const at = ROUND_ORDER.indexOf(name);
    if (at < 0) throw new Error(`no place in the round order for ${name}`);
    return at;
  };
  const sorted = [...entries].sort((a, b) => rank(a.name) - rank(b.name));
  return round % 2 === 0 ? sorted : sorted.reverse();
}

// even: as many rounds forwards as backwards
export const ROUNDS = Math.round(secondsFromEnv('BENCH_ROUNDS', 6));
export const ROUND_SECONDS = secondsFromEnv('BENCH_ROUND_SECONDS', 3);
const ROUND_WARMUP_SECONDS = secondsFromEnv('BENCH_WARMUP_SECONDS', 2);
/**
 * Unmeasured load before each measured cell of a round: a process idle for the rest of the round (tens of
 * seconds) starts its cell warm, whatever entry ran before it (the forward rounds had measured circuit open
 * at c=1 10 points below the reverse ones).
 */
const CELL_WARMUP_SECONDS = secondsFromEnv('BENCH_CELL_WARMUP_SECONDS', 1);
/** Each group of paired requests at c=1 after the rounds (bench/paired.ts); 0 leaves them out (the c=1 targets are then judged by the rounds). */
const PAIRED_SECONDS = process.env.BENCH_PAIRED_SECONDS === '0' ? 0 : secondsFromEnv('BENCH_PAIRED_SECONDS', 30);
/** The judged c=1 figures are taken IN_RUNS (docs/performance.md, "How figures are judged"); the same with one request a turn is shown beside them. */
const ONE_A_TURN = { ...IN_RUNS, inARow: 1, settling: 0 };

interface Spec {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** The x-svc-provider-used every answer must carry (none for the upstream itself). */
  expectProvider?: string;
}

interface Entry {
  name: string;
  spec: Spec;
  connections: 1 | 20;
  firstByte?: boolean;
}

const forkLogged = (urls: UpstreamUrls, databaseUrl: string, logFile: string, failingOver: boolean) =>
  forkHelper(
    join(__dirname, 'logged-proxy.js'),
    [urls.ok, databaseUrl, logFile, ...(failingOver ? [urls.down] : [])],
    isProxyUrl,
  );

/** The gateways of one build (this checkout's, or BENCH_BASELINE's), one per mode. */
async function bootBuild(
  run: Run,
  urls: UpstreamUrls,
  prefix: string,
  modes: readonly ModeName[],
  script?: string,
): Promise<Record<string, BootedGateway>> {
  const booted: Record<string, BootedGateway> = {};
  for (const name of modes)
    booted[name] = await bootGateway(run, urls, name, {
      label: `${prefix}-${name}`,
      script,
      // this build's one-step gateway also serves a key past an open circuit (BootedGateway.openSecret)
      openKey: !script && name === 'one-step',
    });
  return booted;
}

function gatewaySpec(booted: BootedGateway, name: ModeName, body = CHAT_BODY, secret = booted.secret): Spec {
  return {
    url: `${booted.gateway.url}${CHAT_PATH}`,
    headers: { authorization: `Bearer ${secret}` },
    body,
    expectProvider: MODES[name].servedBy,
  };
}

export async function interleavedRounds(
  run: Run,
  upstream: Forked<{ urls: UpstreamUrls }>,
  baseline: string | null,
): Promise<Rounds> {
  const urls = upstream.ready.urls;
  await run.checkpoint();
  const fork = (mode: string[]): Promise<Forked<{ url: string }>> =>
    forkHelper(join(__dirname, 'bare-proxy.js'), [urls.ok, ...mode], isProxyUrl).then((f) => run.track(f));
  const bare = await fork([]);
  const relay = await fork(['relay']);
  const loggedDatabase = await run.createDatabase('logged-proxy-rounds');
  const logged = run.track(await forkLogged(urls, loggedDatabase.url, join(run.tmp, 'logged-proxy-rounds.log'), false));
  const failoverDatabase = await run.createDatabase('logged-failover-rounds');
  const loggedFailover = run.track(
    await forkLogged(urls, failoverDatabase.url, join(run.tmp, 'logged-failover-rounds.log'), true),
  );
  const modes = ['one-step', 'failover', 'circuit-open'] as const;
  const ours = await bootBuild(run, urls, 'rounds', modes);
  const theirs = baseline ? await bootBuild(run, urls, 'baseline', ['one-step', 'failover'], baseline) : null;
  const bareSpec = (proxy: Forked<{ url: string }>, body: string): Spec => ({
    url: `${proxy.ready.url}${CHAT_PATH}`,
    headers: {},
    body,
    expectProvider: 'primary',
  });
  const loggedSpec = (proxy: Forked<{ url: string }>, expectProvider: string): Spec => ({
    url: `${proxy.ready.url}${CHAT_PATH}`,
    headers: { authorization: `Bearer ${LOGGED_PROXY_SECRET}` },
    body: CHAT_BODY,
    expectProvider,
  });
  const entries: Entry[] = [
    {
      name: 'upstream direct c=1',
      spec: { url: `${urls.ok}/chat/completions`, headers: { authorization: 'Bearer x' }, body: CHAT_BODY },
      connections: 1,
    },
    { name: 'bare proxy', spec: bareSpec(bare, CHAT_BODY), connections: 20 },
    // the added p50 at c=1 of the references: what any proxy adds, and what the required work adds on top
    { name: 'bare proxy c=1', spec: bareSpec(bare, CHAT_BODY), connections: 1 },
    { name: 'bare proxy chunked', spec: bareSpec(relay, CHAT_BODY), connections: 20 },
    { name: 'bare stream proxy', spec: bareSpec(relay, STREAM_BODY), connections: 20 },
    { name: 'logged proxy', spec: loggedSpec(logged, 'primary'), connections: 20 },
    { name: 'logged proxy c=1', spec: loggedSpec(logged, 'primary'), connections: 1 },
    { name: 'logged failover', spec: loggedSpec(loggedFailover, 'backup'), connections: 20 },
    { name: 'logged stream proxy', spec: { ...loggedSpec(logged, 'primary'), body: STREAM_BODY }, connections: 20 },
    { name: 'bare stream proxy first byte', spec: bareSpec(relay, STREAM_BODY), connections: 1, firstByte: true },
    // the first byte's floor: what the required per-request work adds to the bare stream proxy's
    {
      name: 'logged stream proxy first byte',
      spec: { ...loggedSpec(logged, 'primary'), body: STREAM_BODY },
      connections: 1,
      firstByte: true,
    },
  ];
  const build = (prefix: string, booted: Record<string, BootedGateway>, withOpen: boolean): void => {
    entries.push(
      { name: `${prefix} one step`, spec: gatewaySpec(booted['one-step'], 'one-step'), connections: 20 },
      { name: `${prefix} one step c=1`, spec: gatewaySpec(booted['one-step'], 'one-step'), connections: 1 },
      { name: `${prefix} stream`, spec: gatewaySpec(booted['one-step'], 'one-step', STREAM_BODY), connections: 20 },
      {
        name: `${prefix} stream first byte`,
        spec: gatewaySpec(booted['one-step'], 'one-step', STREAM_BODY),
        connections: 1,
        firstByte: true,
      },
      { name: `${prefix} failover`, spec: gatewaySpec(booted.failover, 'failover'), connections: 20 },
      { name: `${prefix} failover c=1`, spec: gatewaySpec(booted.failover, 'failover'), connections: 1 },
    );
    if (withOpen) {
      // the same two paths in one process: key against key, so the ratio is the path's cost and not two processes'
      const openSecret = booted['one-step'].openSecret;
      if (!openSecret) throw new Error('the one-step gateway was booted without its open-circuit key');
      const sameProcess = gatewaySpec(booted['one-step'], 'circuit-open', CHAT_BODY, openSecret);
      entries.push(
        { name: `${prefix} circuit open, one-step process`, spec: sameProcess, connections: 20 },
        { name: `${prefix} circuit open, one-step process c=1`, spec: sameProcess, connections: 1 },
      );
      entries.push(
        { name: `${prefix} circuit open`, spec: gatewaySpec(booted['circuit-open'], 'circuit-open'), connections: 20 },
        {
          name: `${prefix} circuit open c=1`,
          spec: gatewaySpec(booted['circuit-open'], 'circuit-open'),
          connections: 1,
        },
      );
    }
  };
  build('gateway', ours, true);
  if (theirs) build('baseline', theirs, false);
  log(`interleaved rounds: ${ROUNDS} x ${ROUND_SECONDS} s per entry (${entries.length} entries)`);

  const rounds: Rounds = { seconds: ROUND_SECONDS, rps: {}, firstByteP50: {}, p50: {}, faults: 0 };
  const once = async (entry: Entry, seconds: number, keep: boolean): Promise<void> => {
    if (entry.firstByte) {
      const result = await measureFirstByte(entry.spec.url, entry.spec.headers, entry.spec.body, seconds);
      if (keep) (rounds.firstByteP50[entry.name] ??= []).push(result.p50);
      rounds.faults += keep ? result.faults : 0;
      return;
    }
    const result = await runLoad({ ...entry.spec, connections: entry.connections, seconds });
    if (!keep) return;
    (rounds.rps[entry.name] ??= []).push(result.rps);
    (rounds.p50[entry.name] ??= []).push(result.p50);
    rounds.faults += result.non2xx + result.errors + result.headerMismatches;
  };
  for (const entry of entries) await once(entry, ROUND_WARMUP_SECONDS, false);
  for (let round = 0; round < ROUNDS; round++) {
    for (const entry of roundOrder(entries, round)) {
      if (CELL_WARMUP_SECONDS > 0) await once(entry, CELL_WARMUP_SECONDS, false);
      await once(entry, ROUND_SECONDS, true);
    }
    log(
      `  round ${round + 1}: ${entries
        .map((e) =>
          e.firstByte
            ? `${e.name} p50 ${rounds.firstByteP50[e.name][round].toFixed(2)} ms`
            : e.connections === 1
              ? `${e.name} ${rounds.rps[e.name][round].toFixed(0)} (p50 ${rounds.p50[e.name][round].toFixed(2)} ms)`
              : `${e.name} ${rounds.rps[e.name][round].toFixed(0)}`,
        )
        .join(', ')} (req/s)`,
    );
  }
  if (PAIRED_SECONDS > 0) {
    rounds.paired = await paired(entries);
    const { c1, firstByte, oneATurn } = rounds.paired;
    rounds.faults += c1.faults + firstByte.faults + oneATurn.c1.faults + oneATurn.firstByte.faults;
  }
  for (const booted of [...Object.values(ours), ...Object.values(theirs ?? {})]) await booted.gateway.stop();
  for (const helper of [loggedFailover, logged, relay, bare]) await helper.stop();
  return rounds;
}

/**
 * The c=1 figures again, the same entries' requests taken in turns (bench/paired.ts): two groups, each in runs of
 * requests (judged) and with one request a turn (shown beside).
 */
async function paired(entries: Entry[]): Promise<NonNullable<Rounds['paired']>> {
  const target = (name: string, as: string): PairedTarget => {
    const entry = entries.find((e) => e.name === name);
    if (!entry) throw new Error(`no entry ${name} to pair`);
    return { name: as, ...entry.spec, firstByte: entry.firstByte };
  };
  log(`paired requests at c=1: ${PAIRED_SECONDS} s per group and way`);
  const c1Targets = [
    target('upstream direct c=1', 'upstream direct'),
    target('bare proxy c=1', 'bare proxy'),
    target('logged proxy c=1', 'logged proxy'),
    target('gateway one step c=1', 'gateway one step'),
    target('gateway circuit open, one-step process c=1', 'gateway circuit open, one-step process'),
  ];
  const firstByteTargets = [
    target('bare stream proxy first byte', 'bare stream proxy'),
    target('logged stream proxy first byte', 'logged stream proxy'),
    target('gateway stream first byte', 'gateway stream'),
  ];
  const c1 = await pairedRequests(c1Targets, PAIRED_SECONDS, IN_RUNS);
  const c1OneATurn = await pairedRequests(c1Targets, PAIRED_SECONDS, ONE_A_TURN);
  const firstByte = await pairedRequests(firstByteTargets, PAIRED_SECONDS, IN_RUNS);
  const firstByteOneATurn = await pairedRequests(firstByteTargets, PAIRED_SECONDS, ONE_A_TURN);
  for (const run of [c1, c1OneATurn, firstByte, firstByteOneATurn])
    log(
      `  ${run.inARow} a turn: ${Object.entries(run.all)
        .map(([name, f]) => `${name} p50 ${f.p50.toFixed(3)} ms mean ${f.mean.toFixed(3)} ms (${f.count})`)
        .join(', ')}; ${run.faults} faults`,
    );
  return { c1, firstByte, oneATurn: { c1: c1OneATurn, firstByte: firstByteOneATurn } };
}
