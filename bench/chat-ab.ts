import { join } from 'node:path';
import { baselineScript, bootGateway, CHAT_BODY, CHAT_PATH, MODES, STREAM_BODY } from './chat-modes';
import type { BootedGateway } from './chat-modes';
import { isUrls } from './chat-measure';
import { runLoad } from './load';
import { forkHelper } from './processes';
import { writeSection } from './results-file';
import { log, machine, runBenchmark, secondsFromEnv } from './run';
import { projectRoot } from '../src/common/paths';

/**
 * `npm run bench:chat-ab`: this build against another (`BENCH_BASELINE`, a checkout's root or its built
 * `dist/src/main.js`) on the gateway's hot paths only — one step at c=20 and c=1, streaming one step at
 * c=20 — alternating A, B, B, A… in short cells for many rounds, so that a slow spell of the shared host
 * falls on both builds. Prints each round and the median of the per-round ratios, for "no regression over
 * 5 %" checks of a change, and writes them to bench/results.md (BENCH_NO_WRITE=1: print only).
 * Env: BENCH_AB_ROUNDS (12), BENCH_AB_SECONDS (4), BENCH_AB_CASES (comma-separated case names, e.g.
 * `one step c=20`; default all), BENCH_BASELINE_LABEL (how the file names the baseline, e.g. its commit;
 * never a machine path).
 */

const RESULTS_FILE = join(projectRoot(), 'bench/results.md');
const ROUNDS = Math.round(secondsFromEnv('BENCH_AB_ROUNDS', 12));
const SECONDS = secondsFromEnv('BENCH_AB_SECONDS', 4);

interface Case {
  name: string;
  body: string;
  connections: number;
}

const ALL_CASES: Case[] = [
  { name: 'one step c=20', body: CHAT_BODY, connections: 20 },
  { name: 'one step c=1', body: CHAT_BODY, connections: 1 },
  { name: 'streaming one step c=20', body: STREAM_BODY, connections: 20 },
];
const chosen = (process.env.BENCH_AB_CASES ?? '')
  .split(',')
  .map((name) => name.trim())
  .filter(Boolean);
const CASES = chosen.length > 0 ? ALL_CASES.filter((c) => chosen.includes(c.name)) : ALL_CASES;

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

runBenchmark('bench:chat-ab', async (run) => {
  const baseline = baselineScript();
  if (!baseline) throw new Error('set BENCH_BASELINE to the other build (a checkout root or its dist/src/main.js)');
  const upstream = run.track(await forkHelper(join(__dirname, 'upstream.js'), [], isUrls));
  const urls = upstream.ready.urls;
  const builds: Array<[string, BootedGateway]> = [
    ['this build', await bootGateway(run, urls, 'one-step', { label: 'ab-this' })],
    ['baseline', await bootGateway(run, urls, 'one-step', { label: 'ab-baseline', script: baseline })],
  ];
  const cell = async (booted: BootedGateway, c: Case, seconds: number): Promise<number> => {
    const result = await runLoad({
      url: `${booted.gateway.url}${CHAT_PATH}`,
      headers: { authorization: `Bearer ${booted.secret}` },
      body: c.body,
      connections: c.connections,
      seconds,
      expectProvider: MODES['one-step'].servedBy,
    });
    if (result.non2xx + result.errors + result.headerMismatches > 0)
      throw new Error(
        `${c.name}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.headerMismatches} mismatches`,
      );
    return result.rps;
  };
  for (const c of CASES) for (const [, booted] of builds) await cell(booted, c, 2);
  const { cores, cpu } = machine();
  log(`A/B: ${ROUNDS} rounds x ${SECONDS} s per cell, ${cores} cores (${cpu}), baseline ${baseline}`);
  const lines: string[] = [];
  for (const c of CASES) {
    const ratios: number[] = [];
    const rps: Record<string, number[]> = { 'this build': [], baseline: [] };
    for (let round = 0; round < ROUNDS; round++) {
      // A B in even rounds, B A in odd ones: neither build always runs first
      const order = round % 2 === 0 ? builds : [...builds].reverse();
      for (const [name, booted] of order) rps[name].push(await cell(booted, c, SECONDS));
      ratios.push(rps['this build'][round] / rps.baseline[round]);
      log(
        `  ${c.name} round ${round + 1}: ${rps['this build'][round].toFixed(0)} / ${rps.baseline[round].toFixed(0)} req/s`,
      );
    }
    const sorted = [...ratios].sort((a, b) => a - b);
    lines.push(
      `${c.name}: this build / baseline = ${(median(ratios) * 100).toFixed(1)} % (median of ${ROUNDS} rounds, ` +
        `${(sorted[0] * 100).toFixed(1)} % to ${(sorted[sorted.length - 1] * 100).toFixed(1)} %; ` +
        `median ${median(rps['this build']).toFixed(0)} / ${median(rps.baseline).toFixed(0)} req/s)`,
    );
  }
  const date = new Date().toISOString();
  process.stdout.write(`\n${lines.join('\n')}\n(${cores} cores, ${date})\n`);
  if (process.env.BENCH_NO_WRITE === '1') return;
  writeSection(
    RESULTS_FILE,
    'chat-ab',
    [
      '## Chat A/B: this build against a baseline build',
      '',
      'Written by `npm run bench:chat-ab` (bench/chat-ab.ts): one-step gateways of both builds side by side, each case',
      `measured in alternating ${SECONDS} s cells (A B, then B A) for ${ROUNDS} rounds; the ratio is the median of the per-round ratios.`,
      '',
      `- Date: ${date}`,
      `- Cores (\`nproc\`): ${cores} (${cpu})`,
      `- Node: ${process.version}`,
      `- Baseline: ${process.env.BENCH_BASELINE_LABEL ?? 'the build named by BENCH_BASELINE'}`,
      '',
      ...lines.map((line) => `- ${line}`),
    ].join('\n'),
  );
});
