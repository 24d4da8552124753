import { join } from 'node:path';
import { chosenCases, compareBuilds, reportComparison, type AbCase, type AbTarget } from './ab-rounds';
import { baselineScript, bootGateway, CHAT_BODY, CHAT_PATH, MODES, STREAM_BODY } from './chat-modes';
import type { BootedGateway } from './chat-modes';
import { isUrls } from './chat-measure';
import { forkHelper } from './processes';
import { runBenchmark, secondsFromEnv } from './run';
import { projectRoot } from '../src/common/paths';

/**
 * `npm run bench:chat-ab`: this build against another (`BENCH_BASELINE`, a checkout's root or its built
 * `dist/src/main.js`) on the gateway's hot paths only — one step at c=20 and c=1, streaming one step at
 * c=20 — alternating A, B, B, A… in short cells for many rounds (bench/ab-rounds.ts), so that a slow spell of
 * the shared host falls on both builds. Prints each round and the median of the per-round ratios, for "no
 * regression over 5 %" checks of a change, and writes them to bench/results.md (BENCH_NO_WRITE=1: print only).
 * Env: BENCH_AB_ROUNDS (12), BENCH_AB_SECONDS (4), BENCH_AB_CASES (comma-separated case names, e.g.
 * `one step c=20`; default all), BENCH_BASELINE_LABEL (how the file names the baseline, e.g. its commit;
 * never a machine path).
 */

const RESULTS_FILE = join(projectRoot(), 'bench/results.md');
const ROUNDS = Math.round(secondsFromEnv('BENCH_AB_ROUNDS', 12));
const SECONDS = secondsFromEnv('BENCH_AB_SECONDS', 4);

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

runBenchmark('bench:chat-ab', async (run) => {
  const baseline = baselineScript();
  if (!baseline) throw new Error('set BENCH_BASELINE to the other build (a checkout root or its dist/src/main.js)');
  const upstream = run.track(await forkHelper(join(__dirname, 'upstream.js'), [], isUrls));
  const urls = upstream.ready.urls;
  const thisBuild = await bootGateway(run, urls, 'one-step', { label: 'ab-this' });
  const other = await bootGateway(run, urls, 'one-step', { label: 'ab-baseline', script: baseline });
  const lines = await compareBuilds(CASES, target(thisBuild), target(other), ROUNDS, SECONDS);
  reportComparison(
    RESULTS_FILE,
    'chat-ab',
    '## Chat A/B: this build against a baseline build',
    'Written by `npm run bench:chat-ab` (bench/chat-ab.ts): one-step gateways of both builds side by side, each case\n' +
      `measured in alternating ${SECONDS} s cells (A B, then B A) for ${ROUNDS} rounds; the ratio is the median of the per-round ratios.`,
    lines,
  );
});
