import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { projectRoot } from '../src/common/paths';
import { runLoad } from './load';
import type { LoadResult } from './load';
import { cpuBetween, Roles, snapshot, waitForQuiet } from './cpu';
import { ask, forkHelper, startGateway, watchRss } from './processes';
import type { Forked, GatewayProcess } from './processes';
import { CHAT_PROFILE_NOTE } from './chat-profile';
import { LOGGED_PROXY_SECRET } from './logged-proxy';
import { renderSummary, summariseProfile } from './profile-summary';
import type { CpuProfile } from './profile-summary';
import { Cell, checks, renderChecks, renderResults, renderTable, ROUND_TARGETS, Target } from './report';
import type { Rounds, RoundTarget } from './report';
import { writeSection } from './results-file';
import { log, machine, Run, runBenchmark, secondsFromEnv } from './run';
import type { UpstreamCounts, UpstreamUrls } from './upstream';

/**
 * `npm run bench:chat`: the upstream direct, a bare reference proxy and the gateway (one step,
 * failing over from a 500ing primary, primary's circuit open) at concurrency 1 and 20, in one run,
 * one target at a time; prints the table and the targets, and writes bench/results.md.
 * `-- --profile[=one-step|failover|circuit-open]` instead runs that gateway mode once under
 * `node --cpu-prof` at c=20 and prints where its time goes (the profile stays in a temp dir);
 * `-- --only=one-step,failover` measures just those modes and prints them without writing the file.
 */

const ROOT = projectRoot();
const GATEWAY_SCRIPT = join(ROOT, 'dist/src/main.js');
const RESULTS_FILE = join(ROOT, 'bench/results.md');
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
const MODEL = 'bench-model';
const CHAT_PATH = '/v1/chat/completions';
const CHAT_BODY = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] });
const CONCURRENCY = [1, 20] as const;
/** Requests allowed to trip the primary's circuit (default threshold 5) before giving up. */
const TRIP_ATTEMPTS = 50;
const SETTLE_MS = 500;
/** Before each cell, wait (bounded) until other people's processes use less than this many cores. */
const QUIET_CORES = 0.15;
const QUIET_WAIT_MS = 60000;

const WARMUP_SECONDS = secondsFromEnv('BENCH_WARMUP_SECONDS', 2);
const MEASURE_SECONDS = secondsFromEnv('BENCH_SECONDS', 10);
/** Interleaved rounds for the ratio targets: how many, and how long each target runs in each. */
const ROUNDS = 5;
const ROUND_SECONDS = secondsFromEnv('BENCH_ROUND_SECONDS', 3);

type ModeName = 'one-step' | 'failover' | 'circuit-open';

/** A gateway set-up measured as one target, in a gateway process (and database) of its own. */
interface GatewayMode {
  target: Target;
  /** Which fake the `primary` provider points at. */
  primary: keyof UpstreamUrls;
  chain: Array<{ provider: string; model: string }>;
  env: Record<string, string>;
  /** The provider every measured response must name in x-svc-provider-used. */
  servedBy: string;
}

const MODES: Record<ModeName, GatewayMode> = {
  'one-step': {
    target: 'gateway one step',
    primary: 'ok',
    chain: [{ provider: 'primary', model: MODEL }],
    env: {},
    servedBy: 'primary',
  },
  failover: {
    target: 'gateway failover',
    primary: 'down',
    chain: [
      { provider: 'primary', model: MODEL },
      { provider: 'backup', model: MODEL },
    ],
    // never trips: every request really tries the primary, gets its 500 and fails over
    env: { SVC_BREAKER_THRESHOLD: '1000000000' },
    servedBy: 'backup',
  },
  'circuit-open': {
    target: 'gateway circuit open',
    primary: 'down',
    chain: [
      { provider: 'primary', model: MODEL },
      { provider: 'backup', model: MODEL },
    ],
    env: {},
    servedBy: 'backup',
  },
};

const isUrls = (m: unknown): m is { urls: UpstreamUrls } => typeof m === 'object' && m !== null && 'urls' in m;
const isCounts = (m: unknown): m is { counts: UpstreamCounts } => typeof m === 'object' && m !== null && 'counts' in m;
const isProxyUrl = (m: unknown): m is { url: string } => typeof m === 'object' && m !== null && 'url' in m;

/** The logged proxy; `failingOver`: each request tries the 500ing fake first (the logged failover reference). */
const forkLogged = (
  urls: UpstreamUrls,
  databaseUrl: string,
  logFile: string,
  failingOver: boolean,
): Promise<Forked<{ url: string }>> =>
  forkHelper(
    join(__dirname, 'logged-proxy.js'),
    [urls.ok, databaseUrl, logFile, ...(failingOver ? [urls.down] : [])],
    isProxyUrl,
  );

function gatewayYaml(urls: UpstreamUrls, mode: GatewayMode): string {
  return `providers:
  - name: primary
    kind: openai
    base_url: ${urls[mode.primary]}
    api_key: x
  - name: backup
    kind: openai
    base_url: ${urls.ok}
    api_key: x
`;
}

interface BootedGateway {
  gateway: GatewayProcess;
  secret: string;
  database: string;
}

async function bootGateway(
  run: Run,
  urls: UpstreamUrls,
  name: ModeName,
  nodeArgs: string[] = [],
  label: string = name,
): Promise<BootedGateway> {
  const mode = MODES[name];
  const config = join(run.tmp, `gateway-${label}.yaml`);
  writeFileSync(config, gatewayYaml(urls, mode));
  const database = await run.createDatabase(label);
  const gateway = run.track(
    await startGateway({
      script: GATEWAY_SCRIPT,
      // BENCH_NODE_ARGS: extra node flags for the gateway, to try one (e.g. a V8 heap setting) against the same run's references
      nodeArgs: [...(process.env.BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean), ...nodeArgs],
      logFile: join(run.tmp, `gateway-${label}.log`),
      env: {
        DATABASE_URL: database.url,
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        SVC_ADMIN_TOKEN: ADMIN_TOKEN,
        SVC_CONFIG: config,
        SVC_DEMO_KEY: 'false',
        SVC_BREAKER_COOLDOWN_MS: '600000',
        ...mode.env,
      },
    }),
  );
  const created = await fetch(`${gateway.url}/v1/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: `bench ${name}`, chain: mode.chain }),
  });
  const body = (await created.json()) as { secret?: string };
  if (created.status !== 201 || !body.secret)
    throw new Error(`key creation failed: ${created.status} ${JSON.stringify(body)}`);
  if (name === 'circuit-open') await tripPrimary(gateway.url, body.secret);
  return { gateway, secret: body.secret, database: database.name };
}

/** Sends requests until the primary is skipped for an open circuit, then checks the health route agrees. */
async function tripPrimary(url: string, secret: string): Promise<void> {
  const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  for (let attempt = 1; attempt <= TRIP_ATTEMPTS; attempt++) {
    const res = await fetch(`${url}${CHAT_PATH}`, { method: 'POST', headers, body: CHAT_BODY });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`tripping the primary: HTTP ${res.status}`);
    if ((res.headers.get('x-svc-fallback-alert') ?? '').includes('circuit open')) {
      const health = (await (await fetch(`${url}/v1/providers/health`, { headers })).json()) as {
        providers: Array<{ provider: string; status: string }>;
      };
      const primary = health.providers.find((p) => p.provider === 'primary');
      if (primary?.status !== 'down') throw new Error(`primary skipped but health says ${JSON.stringify(primary)}`);
      log(`  primary circuit open after ${attempt} requests`);
      return;
    }
  }
  throw new Error(`the primary's circuit did not open within ${TRIP_ATTEMPTS} requests`);
}

interface Subject {
  target: Target;
  url: string;
  headers: Record<string, string>;
  expectProvider?: string;
  /** The process under test, for its RSS and CPU. */
  pid?: number;
  /** The gateway's database, for the CPU of its PostgreSQL backends. */
  database?: string;
}

/** Warm-up then measurement at each concurrency, with the fakes' request counts and the CPU split around the measurement. */
async function measure(run: Run, upstream: Forked<{ urls: UpstreamUrls }>, subject: Subject): Promise<Cell[]> {
  const counts = async (): Promise<UpstreamCounts> => (await ask(upstream.child, 'counts', isCounts)).counts;
  const { cores } = machine();
  let database: number[] = [];
  const roles = (): Roles => ({
    generator: [process.pid],
    upstream: upstream.child.pid === undefined ? [] : [upstream.child.pid],
    subject: subject.pid === undefined ? [] : [subject.pid],
    database,
  });
  const refreshDatabase = async (): Promise<void> => {
    if (subject.database) database = [...new Set([...database, ...(await run.backendPids(subject.database))])];
  };
  const cells: Cell[] = [];
  for (const connections of CONCURRENCY) {
    const spec = {
      url: subject.url,
      headers: subject.headers,
      body: CHAT_BODY,
      connections,
      expectProvider: subject.expectProvider,
    };
    await refreshDatabase();
    const quietOther = await waitForQuiet(roles, cores, QUIET_CORES, QUIET_WAIT_MS);
    const rss = subject.pid === undefined ? null : watchRss(subject.pid);
    await runLoad({ ...spec, seconds: WARMUP_SECONDS });
    await refreshDatabase();
    const before = await counts();
    const cpuBefore = snapshot(roles());
    const result: LoadResult = await runLoad({ ...spec, seconds: MEASURE_SECONDS });
    await refreshDatabase();
    const cpu = cpuBetween(cpuBefore, snapshot(roles()), cores);
    const after = await counts();
    const peakRssMb = rss ? rss.stop() : null;
    const per = (n: number): number => (result.responses > 0 ? n / result.responses : 0);
    cells.push({
      target: subject.target,
      connections,
      result,
      peakRssMb,
      upstreamPerResponse: [per(after.ok - before.ok), per(after.down - before.down)],
      cpu,
      quietOther,
    });
    log(
      `  ${subject.target} c=${connections}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms, ` +
        `non-2xx ${result.non2xx}, errors ${result.errors}, header mismatches ${result.headerMismatches}` +
        `${peakRssMb === null ? '' : `, RSS ${peakRssMb.toFixed(0)} MB`}, other processes ${cpu.other.toFixed(2)} cores`,
    );
    await sleep(SETTLE_MS);
  }
  return cells;
}

/** `--only=one-step,circuit-open`: just those gateway modes, printed and not written (for trying a change quickly). */
async function benchmarkModes(run: Run, names: ModeName[]): Promise<void> {
  const upstream = run.track(await forkHelper(join(__dirname, 'upstream.js'), [], isUrls));
  const cells: Cell[] = [];
  for (const name of names) cells.push(...(await measureMode(run, upstream, name)));
  process.stdout.write(`\n${renderTable(cells)}\n\n(not written to ${RESULTS_FILE}: only some targets ran)\n`);
}

async function measureMode(run: Run, upstream: Forked<{ urls: UpstreamUrls }>, name: ModeName): Promise<Cell[]> {
  log(MODES[name].target);
  await run.checkpoint();
  const { gateway, secret, database } = await bootGateway(run, upstream.ready.urls, name);
  const cells = await measure(run, upstream, {
    target: MODES[name].target,
    url: `${gateway.url}${CHAT_PATH}`,
    headers: { authorization: `Bearer ${secret}` },
    expectProvider: MODES[name].servedBy,
    pid: gateway.pid,
    database,
  });
  await gateway.stop();
  return cells;
}

async function benchmark(run: Run): Promise<void> {
  const upstream = run.track(await forkHelper(join(__dirname, 'upstream.js'), [], isUrls));
  const urls = upstream.ready.urls;
  const cells: Cell[] = [];

  log('upstream direct');
  cells.push(
    ...(await measure(run, upstream, {
      target: 'upstream direct',
      url: `${urls.ok}/chat/completions`,
      headers: { authorization: 'Bearer x' },
    })),
  );

  log('bare proxy');
  const bare = run.track(await forkHelper(join(__dirname, 'bare-proxy.js'), [urls.ok], isProxyUrl));
  cells.push(
    ...(await measure(run, upstream, {
      target: 'bare proxy',
      url: `${bare.ready.url}${CHAT_PATH}`,
      headers: {},
      expectProvider: 'primary',
      pid: bare.child.pid,
    })),
  );
  await bare.stop();

  for (const [target, failingOver] of [
    ['logged proxy', false],
    ['logged failover', true],
  ] as const) {
    log(target);
    await run.checkpoint();
    const database = await run.createDatabase(target.replace(' ', '-'));
    const logged = run.track(
      await forkLogged(urls, database.url, join(run.tmp, `${target.replace(' ', '-')}.log`), failingOver),
    );
    cells.push(
      ...(await measure(run, upstream, {
        target,
        url: `${logged.ready.url}${CHAT_PATH}`,
        headers: { authorization: `Bearer ${LOGGED_PROXY_SECRET}` },
        expectProvider: failingOver ? 'backup' : 'primary',
        pid: logged.child.pid,
        database: database.name,
      })),
    );
    await logged.stop();
  }

  for (const name of ['one-step', 'failover', 'circuit-open'] as const)
    cells.push(...(await measureMode(run, upstream, name)));

  const rounds = await interleavedRounds(run, upstream);
  const list = checks(cells, rounds);
  const info = {
    date: new Date().toISOString(),
    ...machine(),
    node: process.version,
    warmupSeconds: WARMUP_SECONDS,
    seconds: MEASURE_SECONDS,
  };
  writeSection(RESULTS_FILE, 'chat', `${renderResults(info, cells, list).trimEnd()}\n\n${CHAT_PROFILE_NOTE}`);
  process.stdout.write(`\n${renderTable(cells)}\n\n${renderChecks(list)}\n\nwritten to ${RESULTS_FILE}\n`);
  if (list.some((c) => c.pass === false))
    log(
      'a target was missed: `npm run bench:chat -- --profile[=one-step|failover|circuit-open]` shows where the time goes',
    );
}

/**
 * Every ratio target again, in short rounds: the references and the three gateway modes all running,
 * each measured at c=20 for ROUND_SECONDS in turn (the order rotating from round to round).
 */
async function interleavedRounds(run: Run, upstream: Forked<{ urls: UpstreamUrls }>): Promise<Rounds> {
  log(`interleaved rounds: ${ROUNDS} x ${ROUND_SECONDS} s per target at c=20`);
  const urls = upstream.ready.urls;
  await run.checkpoint();
  const bare = run.track(await forkHelper(join(__dirname, 'bare-proxy.js'), [urls.ok], isProxyUrl));
  const loggedDatabase = await run.createDatabase('logged-proxy-rounds');
  const logged = run.track(await forkLogged(urls, loggedDatabase.url, join(run.tmp, 'logged-proxy-rounds.log'), false));
  const failoverDatabase = await run.createDatabase('logged-failover-rounds');
  const loggedFailover = run.track(
    await forkLogged(urls, failoverDatabase.url, join(run.tmp, 'logged-failover-rounds.log'), true),
  );
  const gateways: Partial<Record<ModeName, BootedGateway>> = {};
  for (const name of ['one-step', 'failover', 'circuit-open'] as const)
    gateways[name] = await bootGateway(run, urls, name, [], `${name}-rounds`);
  const gatewaySpec = (name: ModeName): { url: string; headers: Record<string, string>; expectProvider: string } => {
    const booted = gateways[name];
    if (!booted) throw new Error(`${name} did not boot`);
    return {
      url: `${booted.gateway.url}${CHAT_PATH}`,
      headers: { authorization: `Bearer ${booted.secret}` },
      expectProvider: MODES[name].servedBy,
    };
  };
  const specs: Record<RoundTarget, { url: string; headers: Record<string, string>; expectProvider: string }> = {
    'bare proxy': { url: `${bare.ready.url}${CHAT_PATH}`, headers: {}, expectProvider: 'primary' },
    'logged proxy': {
      url: `${logged.ready.url}${CHAT_PATH}`,
      headers: { authorization: `Bearer ${LOGGED_PROXY_SECRET}` },
      expectProvider: 'primary',
    },
    'logged failover': {
      url: `${loggedFailover.ready.url}${CHAT_PATH}`,
      headers: { authorization: `Bearer ${LOGGED_PROXY_SECRET}` },
      expectProvider: 'backup',
    },
    'gateway one step': gatewaySpec('one-step'),
    'gateway failover': gatewaySpec('failover'),
    'gateway circuit open': gatewaySpec('circuit-open'),
  };
  const rounds: Rounds = {
    seconds: ROUND_SECONDS,
    rps: {
      'bare proxy': [],
      'logged proxy': [],
      'logged failover': [],
      'gateway one step': [],
      'gateway failover': [],
      'gateway circuit open': [],
    },
    faults: 0,
  };
  const load = (target: RoundTarget, seconds: number): Promise<LoadResult> =>
    runLoad({ ...specs[target], body: CHAT_BODY, connections: 20, seconds });
  for (const target of ROUND_TARGETS) await load(target, WARMUP_SECONDS);
  for (let round = 0; round < ROUNDS; round++) {
    const order = ROUND_TARGETS.map((_, i) => ROUND_TARGETS[(i + round) % ROUND_TARGETS.length]);
    for (const target of order) {
      const result = await load(target, ROUND_SECONDS);
      rounds.rps[target].push(result.rps);
      rounds.faults += result.non2xx + result.errors + result.headerMismatches;
    }
    log(
      `  round ${round + 1}: ${ROUND_TARGETS.map((t) => `${t} ${rounds.rps[t][round].toFixed(0)}`).join(', ')} req/s`,
    );
  }
  for (const booted of Object.values(gateways)) await booted.gateway.stop();
  await loggedFailover.stop();
  await logged.stop();
  await bare.stop();
  return rounds;
}

/** One gateway mode under `node --cpu-prof` at c=20; the profile is kept outside the repository. */
async function profile(run: Run, name: ModeName): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-profile-'));
  const upstream = run.track(await forkHelper(join(__dirname, 'upstream.js'), [], isUrls));
  const { gateway, secret } = await bootGateway(run, upstream.ready.urls, name, [
    '--cpu-prof',
    `--cpu-prof-dir=${dir}`,
  ]);
  const spec = {
    url: `${gateway.url}${CHAT_PATH}`,
    headers: { authorization: `Bearer ${secret}` },
    body: CHAT_BODY,
    connections: 20,
    expectProvider: MODES[name].servedBy,
  };
  log(`profiling ${MODES[name].target} at c=20 for ${MEASURE_SECONDS} s (after ${WARMUP_SECONDS} s warm-up)`);
  await runLoad({ ...spec, seconds: WARMUP_SECONDS });
  const result = await runLoad({ ...spec, seconds: MEASURE_SECONDS });
  log(
    `  ${result.rps.toFixed(0)} req/s under the profiler, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms`,
  );
  await gateway.stop();
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`the gateway wrote no .cpuprofile into ${dir}`);
  // the measured seconds and the shutdown after them; boot and warm-up are left out
  const summary = summariseProfile(JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile, {
    lastMs: (MEASURE_SECONDS + 1) * 1000,
  });
  process.stdout.write(`\n${renderSummary(summary)}\n\nprofile: ${join(dir, file)} (whole run, boot included)\n`);
}

function onlyModes(argv: string[]): ModeName[] | null {
  const flag = argv.find((a) => a.startsWith('--only='));
  if (!flag) return null;
  const names = flag.slice('--only='.length).split(',');
  const unknown = names.filter((n) => !(n in MODES));
  if (unknown.length > 0)
    throw new Error(
      `--only takes a comma-separated list of ${Object.keys(MODES).join(', ')}; not ${unknown.join(', ')}`,
    );
  return names as ModeName[];
}

function profileMode(argv: string[]): ModeName | null {
  const flag = argv.find((a) => a === '--profile' || a.startsWith('--profile='));
  if (!flag) return null;
  const name = flag.includes('=') ? flag.slice(flag.indexOf('=') + 1) : 'one-step';
  if (!(name in MODES)) throw new Error(`--profile takes one of ${Object.keys(MODES).join(', ')}`);
  return name as ModeName;
}

// exits 0 whenever the run completed, targets met or not (a miss is a result, not a broken run)
runBenchmark('bench:chat', (run) => {
  const argv = process.argv.slice(2);
  const profiled = profileMode(argv);
  if (profiled) return profile(run, profiled);
  const only = onlyModes(argv);
  return only ? benchmarkModes(run, only) : benchmark(run);
});
