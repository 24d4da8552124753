import { join } from 'node:path';
import { chosenCases, compareBuilds, reportComparison, type AbCase, type AbTarget } from './ab-rounds';
import { baselineScript, bootGateway, CHAT_BODY, CHAT_PATH, MODES, STREAM_BODY } from './chat-modes';
import type { BootedGateway } from './chat-modes';
import { isUrls } from './chat-measure';
import { IN_RUNS, pairedRequests, type PairedRun, type PairedTarget } from './paired';
import { forkHelper } from './processes';
import { runBenchmark, secondsFromEnv } from './run';
import { projectRoot } from '../src/common/paths';

/**
 * `npm run bench:chat-ab`: this build against another (`BENCH_BASELINE`, a checkout's root or its built
 * `dist/src/main.js`) on the gateway's hot paths only — one step at c=20 and c=1, streaming one step at
 * c=20 — alternating A, B, B, A… in short cells for many rounds (bench/ab-rounds.ts), so that a slow spell of
 * the shared host falls on both builds. Prints each round and the median of the per-round ratios, for "no
 * regression over 5 %" checks of a change, and writes them to bench/results.md (BENCH_NO_WRITE=1: print only).
 * Then, for the latency at c=1, both builds' requests taken in turns (bench/paired.ts, 20 in a row a turn, the
 * first 5 not kept, as bench:chat judges its c=1 targets): one step's time to the whole answer and a stream's time
 * to its first event, each build's p50 and their difference.
 * Env: BENCH_AB_ROUNDS (12), BENCH_AB_SECONDS (4), BENCH_AB_CASES (comma-separated case names, e.g.
 * `one step c=20`; default all), BENCH_AB_PAIRED_SECONDS (20 per group; 0: none), BENCH_BASELINE_LABEL (how
 * the file names the baseline, e.g. its commit; never a machine path).
 */

const RESULTS_FILE = join(projectRoot(), 'bench/results.md');
const ROUNDS = Math.round(secondsFromEnv('BENCH_AB_ROUNDS', 12));
const SECONDS = secondsFromEnv('BENCH_AB_SECONDS', 4);
const PAIRED_SECONDS = secondsFromEnv('BENCH_AB_PAIRED_SECONDS', 20);

const CASES = chosenCases<AbCase>(
  [
    { name: 'one step c=20', path: CHAT_PATH, body: CHAT_BODY, connections: 20 },
    { name: 'one step c=1', path: CHAT_PATH, body: CHAT_BODY, connections: 1 },
    { name: 'streaming one step c=20', path: CHAT_PATH, body: STREAM_BODY, connections: 20 },
  ],
  process.env.BENCH_AB_CASES,
);

const target = (booted: BootedGateway): AbTarget => ({
  url: booted.gateway.url,
  secret: booted.secret,
  servedBy: MODES['one-step'].servedBy,
});

const pairedTarget = (name: string, booted: BootedGateway, body: string, firstByte: boolean): PairedTarget => ({
  name,
  url: `${booted.gateway.url}${CHAT_PATH}`,
  headers: { authorization: `Bearer ${booted.secret}` },
  body,
  firstByte,
  expectProvider: MODES['one-step'].servedBy,
});

/** The difference of this build's p50 over the baseline's, over the run and over its blocks of turns. */
function pairedLine(what: string, run: PairedRun): string {
  const difference = (figures: PairedRun['all']): number => figures['this build'].p50 - figures.baseline.p50;
  const blocks = run.blocks.map(difference);
  const ms = (x: number): string => `${x >= 0 ? '+' : ''}${x.toFixed(3)} ms`;
  if (run.faults > 0) throw new Error(`${what}: ${run.faults} answers not 2xx or not from the expected provider`);
  return (
    `${what}, the two builds' requests taken in turns: p50 this build - baseline = ${ms(difference(run.all))} ` +
    `(${run.all['this build'].p50.toFixed(3)} - ${run.all.baseline.p50.toFixed(3)} ms, ${run.all.baseline.count} requests ` +
    `each in ${run.seconds} s; ${blocks.length} blocks of consecutive turns: ${ms(Math.min(...blocks))} to ${ms(Math.max(...blocks))})`
  );
}

/** One step's whole answer, then a stream's first event, at c=1 in turns (after 3 s of the same). */
async function pairedLines(thisBuild: BootedGateway, other: BootedGateway): Promise<string[]> {
  if (PAIRED_SECONDS <= 0) return [];
  const groups: Array<[string, string, boolean]> = [
    ['one step c=1, time to the whole answer', CHAT_BODY, false],
    ['streaming one step c=1, time to the first event', STREAM_BODY, true],
  ];
  const lines: string[] = [];
  for (const [what, body, firstByte] of groups) {
    const run = await pairedRequests(
      [pairedTarget('this build', thisBuild, body, firstByte), pairedTarget('baseline', other, body, firstByte)],
      PAIRED_SECONDS,
      IN_RUNS,
    );
    lines.push(pairedLine(what, run));
  }
  return lines;
}

runBenchmark('bench:chat-ab', async (run) => {
  const baseline = baselineScript();
  if (!baseline) throw new Error('set BENCH_BASELINE to the other build (a checkout root or its dist/src/main.js)');
  const upstream = run.track(await forkHelper(join(__dirname, 'upstream.js'), [], isUrls));
  const urls = upstream.ready.urls;
  const thisBuild = await bootGateway(run, urls, 'one-step', { label: 'ab-this' });
  const other = await bootGateway(run, urls, 'one-step', { label: 'ab-baseline', script: baseline });
  const lines = [
    ...(await compareBuilds(CASES, target(thisBuild), target(other), ROUNDS, SECONDS)),
    ...(await pairedLines(thisBuild, other)),
  ];
  reportComparison(
    RESULTS_FILE,
    'chat-ab',
    '## Chat A/B: this build against a baseline build',
    'Written by `npm run bench:chat-ab` (bench/chat-ab.ts): one-step gateways of both builds side by side, each case\n' +
      `measured in alternating ${SECONDS} s cells (A B, then B A) for ${ROUNDS} rounds; the ratio is the median of the per-round ratios.` +
      (PAIRED_SECONDS > 0
        ? ` Then at c=1 the two builds' requests in turns (one keep-alive connection each, A B then B A, 20 in a row a turn of which the first 5 not kept) for ${PAIRED_SECONDS} s per line.`
        : ''),
    lines,
  );
});
