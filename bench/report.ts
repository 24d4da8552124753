import type { CpuUse } from './cpu';
import type { LoadResult } from './load';
import { renderTargetTable } from './results-file';

export const TARGETS = [
  'upstream direct',
  'bare proxy',
  'logged proxy',
  'logged failover',
  'gateway one step',
  'gateway failover',
  'gateway circuit open',
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
const noisy = (cell: Cell): boolean => cell.cpu.other > NOISY_CORES;

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

/** The targets for the 2-core machine. */
export const GOALS = {
  oneStepVsBareAtC20: 0.45,
  oneStepP99AtC20Ms: 15,
  addedP50AtC1Ms: 0.5,
  failoverVsOneStep: 0.8,
  circuitOpenWithin: 0.1,
  peakRssMb: 200,
};

const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;
const ms = (x: number): string => x.toFixed(2);

function find(cells: Cell[], target: Target, connections: number): Cell {
  const cell = cells.find((c) => c.target === target && c.connections === connections);
  if (!cell) throw new Error(`no measurement for ${target} at c=${connections}`);
  return cell;
}

/** The targets measured again in interleaved short rounds (see `Rounds`). */
export const ROUND_TARGETS = [
  'bare proxy',
  'logged proxy',
  'logged failover',
  'gateway one step',
  'gateway failover',
  'gateway circuit open',
] as const;
export type RoundTarget = (typeof ROUND_TARGETS)[number];

/**
 * The req/s ratios measured in interleaved short rounds at c=20 (every target alive at once, one after
 * another in each round): a slow minute on a shared host then lands on both sides of a ratio alike.
 */
export interface Rounds {
  seconds: number;
  /** req/s of each target, one value per round. */
  rps: Record<RoundTarget, number[]>;
  /** Non-2xx responses, socket errors and header mismatches over all rounds. */
  faults: number;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** Per-round ratios of two targets: their median, and the range it came from. */
function roundRatio(rounds: Rounds, top: RoundTarget, bottom: RoundTarget): { median: number; text: string } {
  const ratios = rounds.rps[top].map((rps, i) => rps / rounds.rps[bottom][i]);
  const m = median(ratios);
  return {
    median: m,
    text: `${pct(m)} (median of ${ratios.length} interleaved ${rounds.seconds} s rounds, ${pct(Math.min(...ratios))} to ${pct(Math.max(...ratios))}; median ${median(rounds.rps[top]).toFixed(0)} / ${median(rounds.rps[bottom]).toFixed(0)} req/s)`,
  };
}

/** The ratios the issue asks for, each against its target. */
export function checks(cells: Cell[], rounds: Rounds): Check[] {
  const direct1 = find(cells, 'upstream direct', 1);
  const bare20 = find(cells, 'bare proxy', 20);
  const logged20 = find(cells, 'logged proxy', 20);
  const loggedFailover20 = find(cells, 'logged failover', 20);
  const one1 = find(cells, 'gateway one step', 1);
  const one20 = find(cells, 'gateway one step', 20);
  const failover20 = find(cells, 'gateway failover', 20);
  const open20 = find(cells, 'gateway circuit open', 20);
  const gatewayCells = cells.filter((c) => c.target.startsWith('gateway'));
  const peakRss = Math.max(...gatewayCells.map((c) => c.peakRssMb ?? 0));
  const addedP50 = one1.result.p50 - direct1.result.p50;
  const faults =
    rounds.faults + cells.reduce((n, c) => n + c.result.non2xx + c.result.errors + c.result.headerMismatches, 0);
  const oneVsBare = roundRatio(rounds, 'gateway one step', 'bare proxy');
  const failoverVsOne = roundRatio(rounds, 'gateway failover', 'gateway one step');
  const openVsOne = roundRatio(rounds, 'gateway circuit open', 'gateway one step');
  const cellRatio = (top: Cell, bottom: Cell): string =>
    `${pct(top.result.rps / bottom.result.rps)} in the ${top.result.seconds.toFixed(0)} s cells below`;
  return [
    {
      name: 'one step vs bare proxy, req/s at c=20',
      value: `${oneVsBare.text}; ${cellRatio(one20, bare20)}`,
      target: `>= ${pct(GOALS.oneStepVsBareAtC20)}`,
      pass: oneVsBare.median >= GOALS.oneStepVsBareAtC20,
    },
    {
      name: 'logged proxy (bare proxy + the per-request work every request needs) vs bare proxy, req/s at c=20',
      value: `${roundRatio(rounds, 'logged proxy', 'bare proxy').text}; ${cellRatio(logged20, bare20)}`,
      target: '-',
      pass: null,
    },
    {
      name: 'one step vs logged proxy, req/s at c=20',
      value: `${roundRatio(rounds, 'gateway one step', 'logged proxy').text}; ${cellRatio(one20, logged20)}`,
      target: '-',
      pass: null,
    },
    {
      name: 'one step p99 at c=20',
      value: `${ms(one20.result.p99)} ms`,
      target: `<= ${GOALS.oneStepP99AtC20Ms} ms`,
      pass: one20.result.p99 <= GOALS.oneStepP99AtC20Ms,
    },
    {
      name: 'added p50 at c=1 (one step - upstream direct)',
      value: `${ms(addedP50)} ms (${ms(one1.result.p50)} - ${ms(direct1.result.p50)})`,
      target: `<= ${GOALS.addedP50AtC1Ms} ms`,
      pass: addedP50 <= GOALS.addedP50AtC1Ms,
    },
    {
      name: 'failover vs one step, req/s at c=20',
      value: `${failoverVsOne.text}; ${cellRatio(failover20, one20)}`,
      target: `>= ${pct(GOALS.failoverVsOneStep)}`,
      pass: failoverVsOne.median >= GOALS.failoverVsOneStep,
    },
    {
      name: 'logged failover vs logged proxy (the same floor for a request that fails over), req/s at c=20',
      value: `${roundRatio(rounds, 'logged failover', 'logged proxy').text}; ${cellRatio(loggedFailover20, logged20)}`,
      target: '-',
      pass: null,
    },
    {
      name: 'circuit open vs one step, req/s at c=20',
      value: `${openVsOne.text}; ${cellRatio(open20, one20)}`,
      target: `within ${pct(GOALS.circuitOpenWithin)} (${pct(1 - GOALS.circuitOpenWithin)} to ${pct(1 + GOALS.circuitOpenWithin)})`,
      pass: Math.abs(openVsOne.median - 1) <= GOALS.circuitOpenWithin,
    },
    {
      name: 'peak gateway RSS under load',
      value: `${peakRss.toFixed(0)} MB`,
      target: `<= ${GOALS.peakRssMb} MB`,
      pass: peakRss <= GOALS.peakRssMb,
    },
    {
      name: 'every response 2xx with the expected x-svc-provider-used',
      value: `${faults} non-2xx, socket errors or header mismatches`,
      target: '0',
      pass: faults === 0,
    },
  ];
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

Written by \`npm run bench:chat\` (bench/chat.ts).

- Date: ${info.date}
- Cores (\`nproc\`): ${info.cores} (${info.cpu})
- Node: ${info.node}
- Each cell: ${info.warmupSeconds} s warm-up, then ${info.seconds} s measured, autocannon with c keep-alive connections, no pipelining
- Request: \`POST /v1/chat/completions\` \`{"model":"bench-model","messages":[{"role":"user","content":"hi"}]}\`, non-streaming
- Load generator, fake upstream, the references and the gateway are separate processes on the same cores; one target is measured at a time
- References: *bare proxy* = \`node:http\` + an undici pool passing bytes through, four headers added (bench/bare-proxy.ts);
  *logged proxy* = the bare proxy plus only the work every gateway request needs (key hash, body parsed and model
  replaced, answer parsed with \`provider\` added, a pino-http line to a file, a usage record batched to PostgreSQL;
  bench/logged-proxy.ts), for information: about the most a gateway that logs, authenticates and records can reach;
  *logged failover* = the logged proxy sending each request to the 500ing upstream first (error body read, a warning
  logged), then to the answering one, its failover event stored before the answer (decisions §8; concurrent events
  share an INSERT, at most two in flight) and the alert header added: the same floor for a request that fails over
- Gateway: \`node dist/src/main.js\`, \`LOG_LEVEL=info\` (JSON logs written to a file), proxy-key auth, usage records,
  x-svc-* headers, a fresh PostgreSQL database per gateway process; one gateway process per mode
- Modes: *one step* = chain \`[primary]\`; *failover* = chain \`[primary, backup]\`, primary always answers 500,
  \`SVC_BREAKER_THRESHOLD=1000000000\` so every request really tries it first; *circuit open* = the same chain,
  default threshold, the primary's circuit tripped before measuring (\`SVC_BREAKER_COOLDOWN_MS=600000\`)
- Each target that writes to PostgreSQL starts after a CHECKPOINT, so the writes of the target before are not
  flushed while it is measured
- The req/s ratio targets are the median of per-round ratios from interleaved short rounds at c=20 (every target
  running at once, measured one after another in each round, the order rotating), so a slow spell of the shared
  host falls on both sides of a ratio; the ratio of the longer cells in the tables is shown beside it
- Latency percentiles are computed from every response's own time (sub-millisecond), nearest rank
- On a shared VM absolute figures move by tens of percent between runs; the targets compare cells of the same run

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
