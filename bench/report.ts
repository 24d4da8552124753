import type { CpuUse } from './cpu';
import type { LoadResult } from './load';
import type { PairedRun } from './paired';
import { renderTargetTable } from './results-file';

export const TARGETS = [
  'upstream direct',
  'bare proxy',
  'bare proxy chunked',
  'bare stream proxy',
  'logged proxy',
  'logged failover',
  'logged stream proxy',
  'gateway one step',
  'gateway failover',
  'gateway circuit open',
  'gateway stream',
] as const;
export type Target = (typeof TARGETS)[number];

/** One measured cell: a target at one concurrency. */
export interface Cell {
  target: Target;
  connections: number;
  result: LoadResult;
  /** Peak RSS of the process under test while it was loaded (MB); null for the upstream itself. */
  peakRssMb: number | null;
  /** Requests the fakes received per response: [answering fake, 500ing fake]. */
  upstreamPerResponse: [number, number];
  /** Cores used during the measured seconds, per role, and by everything else on the machine. */
  cpu: CpuUse;
  /** Cores other processes used just before the cell (after waiting for a quiet moment). */
  quietOther: number;
}

/** Cells during which other processes took more than this many cores are marked as disturbed. */
export const NOISY_CORES = 0.2;
export const noisy = (cell: Cell): boolean => cell.cpu.other > NOISY_CORES;

export interface Check {
  name: string;
  value: string;
  target: string;
  /** null: a figure shown for information, with no target of its own. */
  pass: boolean | null;
}

export interface RunInfo {
  date: string;
  cores: number;
  cpu: string;
  node: string;
  warmupSeconds: number;
  seconds: number;
}

export const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;
export const ms = (x: number): string => x.toFixed(2);

/**
 * The ratios measured in interleaved short rounds (see bench/chat-rounds.ts): req/s per round of each
 * entry (`<target>` at c=20, `<target> c=1`), and the p50 time to the first streamed byte at c=1.
 */
export interface Rounds {
  seconds: number;
  rps: Record<string, number[]>;
  firstByteP50: Record<string, number[]>;
  /** Each entry's p50 latency (ms) per round, for the c=1 latency targets. */
  p50: Record<string, number[]>;
  /** Non-2xx responses, socket errors and header mismatches over all rounds. */
  faults: number;
  /**
   * The c=1 figures from requests taken in turns (bench/paired.ts): one step, circuit open and the references; the
   * first byte. Each target's requests in runs (judged), and `oneATurn` the same with one request a turn.
   */
  paired?: { c1: PairedRun; firstByte: PairedRun; oneATurn: { c1: PairedRun; firstByte: PairedRun } };
}

export function renderTable(cells: Cell[]): string {
  const lines = [
    '| target | c | req/s | p50 ms | p99 ms | non-2xx | errors | header mismatches | responses | peak RSS MB | upstream calls / response (ok, 500) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const cell of ordered(cells)) {
    const {
      target,
      connections,
      result: r,
      peakRssMb,
      upstreamPerResponse: [ok, down],
    } = cell;
    const rss = peakRssMb === null ? '-' : peakRssMb.toFixed(0);
    lines.push(
      `| ${target}${noisy(cell) ? ' (disturbed)' : ''} | ${connections} | ${r.rps.toFixed(0)} | ${ms(r.p50)} | ${ms(r.p99)} | ${r.non2xx} | ${r.errors} | ${r.headerMismatches} | ${r.responses} | ${rss} | ${ok.toFixed(2)}, ${down.toFixed(2)} |`,
    );
  }
  return lines.join('\n');
}

const ordered = (cells: Cell[]): Cell[] =>
  TARGETS.flatMap((target) => cells.filter((c) => c.target === target).sort((a, b) => a.connections - b.connections));

/** Where the cores went while each cell was measured. */
export function renderCpuTable(cells: Cell[]): string {
  const lines = [
    '| target | c | load generator | fake upstream | process under test | its PostgreSQL backends | other processes | other processes just before |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const cores = (x: number | undefined): string => (x ?? 0).toFixed(2);
  for (const { target, connections, cpu, quietOther } of ordered(cells)) {
    lines.push(
      `| ${target} | ${connections} | ${cores(cpu.generator)} | ${cores(cpu.upstream)} | ${cores(cpu.subject)} | ${cores(cpu.database)} | ${cores(cpu.other)} | ${cores(quietOther)} |`,
    );
  }
  return lines.join('\n');
}

export const renderChecks = (list: Check[]): string =>
  list
    .map((c) => `${c.pass === null ? 'INFO' : c.pass ? 'PASS' : 'FAIL'}  ${c.name}: ${c.value} (target ${c.target})`)
    .join('\n');

export function renderResults(info: RunInfo, cells: Cell[], list: Check[]): string {
  const targets = renderTargetTable(
    list.map((c) => ({ figure: c.name, value: c.value, target: c.target, pass: c.pass })),
  );
  return `## Chat benchmark

Written by \`npm run bench:chat\` (bench/chat.ts); the method, the references and the conclusions are in
[docs/performance.md](../docs/performance.md).

- Date: ${info.date}
- Cores (\`nproc\`): ${info.cores} (${info.cpu})
- Node: ${info.node}
- Each cell: ${info.warmupSeconds} s warm-up, then ${info.seconds} s measured, autocannon with c keep-alive connections, no pipelining
- Targets marked [16] are issue 16's; ratios are medians of interleaved rounds, c=1 targets are judged by paired requests

### Targets

${targets}

### Results

${renderTable(cells)}

Cells marked *(disturbed)* ran while processes outside the benchmark used more than ${NOISY_CORES} cores; repeat the run
on a quiet machine before trusting them.

### CPU during the measured seconds (cores)

${renderCpuTable(cells)}
`;
}
