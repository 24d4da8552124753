import { runLoad } from './load';
import { writeSection, type Section } from './results-file';
import { log, machine } from './run';

/**
 * The A/B loop of `bench:chat-ab` and `bench:speech-ab`: this build against a baseline build, each case measured
 * in alternating cells (A B in even rounds, B A in odd ones, so neither build always runs first and a slow spell
 * of the shared host falls on both), the ratio the median of the per-round ratios.
 */

/** One build's gateway as a case reaches it. */
export interface AbTarget {
  url: string;
  secret: string;
  /** Every answer must name this provider in `x-svc-provider-used`. */
  servedBy: string;
}

export interface AbCase {
  name: string;
  path: string;
  body: string;
  connections: number;
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** The cases named in `env` (comma-separated), or all of them. */
export function chosenCases<T extends { name: string }>(all: T[], env: string | undefined): T[] {
  const chosen = (env ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  return chosen.length > 0 ? all.filter((c) => chosen.includes(c.name)) : all;
}

async function cell(target: AbTarget, c: AbCase, seconds: number): Promise<number> {
  const result = await runLoad({
    url: `${target.url}${c.path}`,
    headers: { authorization: `Bearer ${target.secret}` },
    body: c.body,
    connections: c.connections,
    seconds,
    expectProvider: target.servedBy,
  });
  if (result.non2xx + result.errors + result.headerMismatches > 0)
    throw new Error(
      `${c.name}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.headerMismatches} mismatches`,
    );
  return result.rps;
}

/** Warms each case on both builds (2 s), then runs the rounds; one line per case. */
export async function compareBuilds(
  cases: AbCase[],
  thisBuild: AbTarget,
  baseline: AbTarget,
  rounds: number,
  seconds: number,
): Promise<string[]> {
  const builds: Array<[string, AbTarget]> = [
    ['this build', thisBuild],
    ['baseline', baseline],
  ];
  for (const c of cases) for (const [, target] of builds) await cell(target, c, 2);
  const { cores, cpu } = machine();
  log(`A/B: ${rounds} rounds x ${seconds} s per cell, ${cores} cores (${cpu})`);
  const lines: string[] = [];
  for (const c of cases) {
    const ratios: number[] = [];
    const rps: Record<string, number[]> = { 'this build': [], baseline: [] };
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? builds : [...builds].reverse();
      for (const [name, target] of order) rps[name].push(await cell(target, c, seconds));
      ratios.push(rps['this build'][round] / rps.baseline[round]);
      log(
        `  ${c.name} round ${round + 1}: ${rps['this build'][round].toFixed(0)} / ${rps.baseline[round].toFixed(0)} req/s`,
      );
    }
    const sorted = [...ratios].sort((a, b) => a - b);
    lines.push(
      `${c.name}: this build / baseline = ${(median(ratios) * 100).toFixed(1)} % (median of ${rounds} rounds, ` +
        `${(sorted[0] * 100).toFixed(1)} % to ${(sorted[sorted.length - 1] * 100).toFixed(1)} %; ` +
        `median ${median(rps['this build']).toFixed(0)} / ${median(rps.baseline).toFixed(0)} req/s)`,
    );
  }
  return lines;
}

/** Prints the lines and (unless BENCH_NO_WRITE=1) writes them as the benchmark's section of bench/results.md. */
export function reportComparison(
  file: string,
  section: Section,
  heading: string,
  description: string,
  lines: string[],
): void {
  const { cores, cpu } = machine();
  const date = new Date().toISOString();
  process.stdout.write(`\n${lines.join('\n')}\n(${cores} cores, ${date})\n`);
  writeSection(
    file,
    section,
    [
      heading,
      '',
      description,
      '',
      `- Date: ${date}`,
      `- Cores (\`nproc\`): ${cores} (${cpu})`,
      `- Node: ${process.version}`,
      `- Baseline: ${process.env.BENCH_BASELINE_LABEL ?? 'the build named by BENCH_BASELINE'}`,
      '',
      ...lines.map((line) => `- ${line}`),
    ].join('\n'),
  );
}
