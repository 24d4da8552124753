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

Written by \`npm run bench:chat\` (bench/chat.ts).

- Date: ${info.date}
- Cores (\`nproc\`): ${info.cores} (${info.cpu})
- Node: ${info.node}
- Each cell: ${info.warmupSeconds} s warm-up, then ${info.seconds} s measured, autocannon with c keep-alive connections, no pipelining
- Request: \`POST /v1/chat/completions\` \`{"model":"bench-model","messages":[{"role":"user","content":"hi"}]}\`, non-streaming;
  *stream* targets send the same with \`"stream": true\` (the fake upstream answers in 7 events plus \`[DONE]\`, one write each)
- Load generator, fake upstream, the references and the gateway are separate processes on the same cores; one target is measured at a time
- References: *bare proxy* = \`node:http\` + an undici pool passing bytes through, four headers added (bench/bare-proxy.ts);
  *bare proxy chunked* = the same writing the upstream's answer chunk by chunk as it arrives (chunked transfer
  encoding, no content-length); *bare stream proxy* = that relay answering the streaming request (the SSE passed through);
  *logged proxy* = the bare proxy plus only the work every gateway request needs (key hash, body parsed and model
  replaced, answer parsed with \`provider\` added, the gateway's own request line to a file (pino-http with the
  gateway's options), each upstream call under a timer as the gateway's, a usage record batched to PostgreSQL;
  bench/logged-proxy.ts), for information: about the most a gateway that logs, authenticates and records can reach;
  *logged failover* = the logged proxy sending each request to the 500ing upstream first (error body read, a warning
  logged), then to the answering one, its failover event stored before the answer (decisions §8; concurrent events
  share an INSERT, at most two in flight) and the alert header added: the same floor for a request that fails over;
  *logged stream proxy* = the logged proxy answering the streaming request: the bare stream proxy's relay with the
  same per-request work, each event parsed (usage, a mid-stream error) and sent on with \`provider\` appended
- Gateway: \`node dist/src/main.js\`, \`LOG_LEVEL=info\` (JSON logs written to a file), proxy-key auth, usage records,
  x-svc-* headers, a fresh PostgreSQL database per gateway process; one gateway process per mode
- Modes: *one step* = chain \`[primary]\`; *failover* = chain \`[primary, backup]\`, primary always answers 500,
  \`SVC_BREAKER_THRESHOLD=1000000000\` so every request really tries it first; *circuit open* = the same chain,
  default threshold, the primary's circuit tripped before measuring (\`SVC_BREAKER_COOLDOWN_MS=600000\`); in the
  rounds the one-step gateway also holds a second key, chain \`[dead, backup]\` with dead's circuit tripped at boot,
  and issue 16's circuit-open targets compare its two keys in that one process (the two paths, not two processes'
  histories); the circuit-open gateway of its own is shown beside them
- Each target that writes to PostgreSQL starts after a CHECKPOINT, so the writes of the target before are not
  flushed while it is measured
- Targets marked [16] are issue 16's (the others are the earlier targets, kept so the change is visible); the
  c=1 ratios, the first byte (request sent to the first SSE event, one keep-alive connection) and the added p50
  (the one-step gateway's p50 at c=1 less the upstream's own, measured beside it; the bare and the logged proxy's
  the same way, as the floor any proxy and the required work set) are measured twice: in the same interleaved
  rounds, as medians of per-round differences, and after the rounds in paired requests (bench/paired.ts), by which
  issue 16's three c=1 targets are judged: the entries' requests taken in turns on one keep-alive connection each,
  one request at a time (upstream direct, bare proxy, logged proxy, one step, circuit open; then the bare stream
  proxy, the logged stream proxy and the streaming one step for the first byte), forwards then backwards, for BENCH_PAIRED_SECONDS (30 s)
  after 3 s of the same, each target's requests 20 in a row a turn, as a c=1 client sends them, the first 5 of
  each run not kept; the two sides of a figure are then a few tens of milliseconds apart, where two 3 s cells of
  a round can fall on different states of the host (their per-round figures spread over tens of percent). The
  same with one request a turn is shown beside: there every request meets the machine's caches as the other
  targets' requests left them, which no client of one gateway does, and the larger process pays the most for it
  (bench/chat-profile.ts item 22). At c=1 req/s is one over the mean time per request, so the circuit-open ratio
  is one step's mean time over circuit open's. Each paired figure is shown with its range over 10 blocks of consecutive turns; the webhook
  figure counts deliveries to one subscriber of a circuit-open gateway loaded at c=20 for one
  \`SVC_FAILOVER_EVENT_WINDOW\` (BENCH_WEBHOOK_SECONDS, default 30 s)
- The req/s ratio targets are the median of per-round ratios from interleaved short rounds (every target
  running at once, measured one after another in each round, the two sides of each ratio back to back or one
  entry apart, every other round in the reverse order, each cell after 1 s of unmeasured load:
  BENCH_CELL_WARMUP_SECONDS), so a slow spell of the shared host falls on both sides of a ratio and no process
  is measured cold after idling through the rest of the round; the ratio of the longer cells in the tables is
  shown beside it
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
