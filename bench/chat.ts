import { join } from 'node:path';
import { projectRoot } from '../src/common/paths';
import { forkHelper } from './processes';
import type { Forked } from './processes';
import { checks } from './chat-checks';
import { baselineScript, bootGateway, CHAT_BODY, CHAT_PATH, MODES, STREAM_BODY } from './chat-modes';
import type { ModeName } from './chat-modes';
import { isProxyUrl, isUrls, measure, MEASURE_SECONDS, WARMUP_SECONDS } from './chat-measure';
import { interleavedRounds } from './chat-rounds';
import { LOGGED_PROXY_SECRET } from './logged-proxy';
import { profiledLoad } from './profiled-load';
import { Cell, renderChecks, renderResults, renderTable } from './report';
import { writeSection } from './results-file';
import { log, machine, Run, runBenchmark } from './run';
import type { UpstreamUrls } from './upstream';
import { webhookStorm } from './webhook-storm';

/**
 * `npm run bench:chat`: the upstream direct, the bare reference proxies (bytes, chunked answer,
 * streaming), the logged references and the gateway (one step, streaming one step, failing over from
 * a 500ing primary, primary's circuit open) at concurrency 1 and 20, one target at a time; then every
 * ratio again in interleaved rounds (bench/chat-rounds.ts), the webhook deliveries of an open circuit
 * (bench/webhook-storm.ts); prints the table and the targets, and writes bench/results.md.
 * `-- --profile[=one-step|failover|circuit-open|stream]` instead runs that gateway mode once under
 * `node --cpu-prof` at c=20 and prints where its time goes (the profile stays in a temp dir);
 * `-- --only=one-step,failover` measures just those modes and prints them without writing the file.
 * Env: BENCH_ROUNDS, BENCH_ROUND_SECONDS, BENCH_SECONDS, BENCH_WARMUP_SECONDS, BENCH_WEBHOOK_SECONDS,
 * BENCH_QUIET_WAIT_SECONDS
 * (durations, for a quick smoke run), BENCH_BASELINE (another build run alongside in the rounds),
 * BENCH_NO_WRITE=1 (print only).
 */

const RESULTS_FILE = join(projectRoot(), 'bench/results.md');

type ProfileName = ModeName | 'stream';

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

/** `--only=one-step,circuit-open`: just those gateway modes, printed and not written (for trying a change quickly). */
async function benchmarkModes(run: Run, names: ModeName[]): Promise<void> {
  const upstream = run.track(await forkHelper(join(__dirname, 'upstream.js'), [], isUrls));
  const cells: Cell[] = [];
  for (const name of names) cells.push(...(await measureMode(run, upstream, name)));
  process.stdout.write(`\n${renderTable(cells)}\n\n(not written to ${RESULTS_FILE}: only some targets ran)\n`);
}

/** A gateway mode's cells; the one-step gateway is also measured streaming (`gateway stream`). */
async function measureMode(run: Run, upstream: Forked<{ urls: UpstreamUrls }>, name: ModeName): Promise<Cell[]> {
  log(MODES[name].target);
  await run.checkpoint();
  const { gateway, secret, database } = await bootGateway(run, upstream.ready.urls, name);
  const subject = {
    target: MODES[name].target,
    url: `${gateway.url}${CHAT_PATH}`,
    headers: { authorization: `Bearer ${secret}` },
    body: CHAT_BODY,
    expectProvider: MODES[name].servedBy,
    pid: gateway.pid,
    database,
  };
  const cells = await measure(run, upstream, subject);
  if (name === 'one-step') {
    log('gateway stream');
    cells.push(...(await measure(run, upstream, { ...subject, target: 'gateway stream', body: STREAM_BODY })));
  }
  await gateway.stop();
  return cells;
}

async function references(run: Run, upstream: Forked<{ urls: UpstreamUrls }>): Promise<Cell[]> {
  const urls = upstream.ready.urls;
  const cells: Cell[] = [];
  log('upstream direct');
  cells.push(
    ...(await measure(run, upstream, {
      target: 'upstream direct',
      url: `${urls.ok}/chat/completions`,
      headers: { authorization: 'Bearer x' },
      body: CHAT_BODY,
    })),
  );
  for (const [target, mode, body] of [
    ['bare proxy', [], CHAT_BODY],
    ['bare proxy chunked', ['relay'], CHAT_BODY],
    ['bare stream proxy', ['relay'], STREAM_BODY],
  ] as const) {
    log(target);
    const bare = run.track(await forkHelper(join(__dirname, 'bare-proxy.js'), [urls.ok, ...mode], isProxyUrl));
    cells.push(
      ...(await measure(run, upstream, {
        target,
        url: `${bare.ready.url}${CHAT_PATH}`,
        headers: {},
        body,
        expectProvider: 'primary',
        pid: bare.child.pid,
      })),
    );
    await bare.stop();
  }
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
    const subject = {
      target,
      url: `${logged.ready.url}${CHAT_PATH}`,
      headers: { authorization: `Bearer ${LOGGED_PROXY_SECRET}` },
      body: CHAT_BODY,
      expectProvider: failingOver ? 'backup' : 'primary',
      pid: logged.child.pid,
      database: database.name,
    };
    cells.push(...(await measure(run, upstream, subject)));
    if (!failingOver) {
      log('logged stream proxy');
      await run.checkpoint();
      cells.push(...(await measure(run, upstream, { ...subject, target: 'logged stream proxy', body: STREAM_BODY })));
    }
    await logged.stop();
  }
  return cells;
}

async function benchmark(run: Run): Promise<void> {
  const baseline = baselineScript();
  const upstream = run.track(await forkHelper(join(__dirname, 'upstream.js'), [], isUrls));
  const cells = await references(run, upstream);
  for (const name of ['one-step', 'failover', 'circuit-open'] as const)
    cells.push(...(await measureMode(run, upstream, name)));
  const rounds = await interleavedRounds(run, upstream, baseline);
  const storm = await webhookStorm(run, upstream.ready.urls);
  const list = checks(cells, rounds, storm);
  const info = {
    date: new Date().toISOString(),
    ...machine(),
    node: process.version,
    warmupSeconds: WARMUP_SECONDS,
    seconds: MEASURE_SECONDS,
  };
  const write = process.env.BENCH_NO_WRITE !== '1';
  writeSection(RESULTS_FILE, 'chat', renderResults(info, cells, list));
  process.stdout.write(
    `\n${renderTable(cells)}\n\n${renderChecks(list)}\n\n${write ? `written to ${RESULTS_FILE}` : 'not written (BENCH_NO_WRITE=1)'} (${info.cores} cores, ${info.date})\n`,
  );
  if (list.some((c) => c.pass === false))
    log(
      'a target was missed: `npm run bench:chat -- --profile[=one-step|failover|circuit-open|stream]` shows where the time goes',
    );
}

/** One gateway mode under `node --cpu-prof` at c=20; the profile is kept outside the repository. */
async function profile(run: Run, profiled: ProfileName): Promise<void> {
  const upstream = run.track(await forkHelper(join(__dirname, 'upstream.js'), [], isUrls));
  const name: ModeName = profiled === 'stream' ? 'one-step' : profiled;
  await profiledLoad((nodeArgs) => bootGateway(run, upstream.ready.urls, name, { nodeArgs }), {
    what: profiled === 'stream' ? 'gateway stream' : MODES[name].target,
    path: CHAT_PATH,
    body: profiled === 'stream' ? STREAM_BODY : CHAT_BODY,
    connections: 20,
    expectProvider: MODES[name].servedBy,
    warmupSeconds: WARMUP_SECONDS,
    seconds: MEASURE_SECONDS,
  });
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

function profileMode(argv: string[]): ProfileName | null {
  const flag = argv.find((a) => a === '--profile' || a.startsWith('--profile='));
  if (!flag) return null;
  const name = flag.includes('=') ? flag.slice(flag.indexOf('=') + 1) : 'one-step';
  if (!(name in MODES) && name !== 'stream')
    throw new Error(`--profile takes one of ${[...Object.keys(MODES), 'stream'].join(', ')}`);
  return name as ProfileName;
}

// exits 0 whenever the run completed, targets met or not (a miss is a result, not a broken run)
runBenchmark('bench:chat', (run) => {
  const argv = process.argv.slice(2);
  const profiled = profileMode(argv);
  if (profiled) return profile(run, profiled);
  const only = onlyModes(argv);
  return only ? benchmarkModes(run, only) : benchmark(run);
});
