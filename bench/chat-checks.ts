import { Cell, Check, ms, pct, Rounds, Target } from './report';
import type { PairedFigures, PairedRun } from './paired';
import type { WebhookStorm } from './webhook-storm';

/** bench:chat's targets: the earlier issue's lines (kept so the change is visible) and issue 16's. */

/** The earlier targets for the 2-core machine. */
export const GOALS = {
  oneStepVsBareAtC20: 0.45,
  oneStepP99AtC20Ms: 15,
  addedP50AtC1Ms: 0.5,
  failoverVsOneStep: 0.8,
  circuitOpenWithin: 0.1,
  peakRssMb: 200,
};

/** Issue 16's targets (speed at incident time, streaming). */
export const GOALS_16 = {
  circuitOpenVsOneStep: 0.95,
  failoverVsOneStep: 0.5,
  streamVsBareStream: 0.5,
  firstByteOverBareMs: 0.2,
  oneStepVsBareChunked: 0.5,
  oneStepP99AtC20Ms: 12,
  addedP50AtC1Ms: 0.3,
  peakRssMb: 200,
  /** Per key per replica, plus the closing event. */
  webhookDeliveries: 2,
  /** BENCH_BASELINE: this build against the other within this share. */
  baselineWithin: 0.05,
};

function find(cells: Cell[], target: Target, connections: number): Cell {
  const cell = cells.find((c) => c.target === target && c.connections === connections);
  if (!cell) throw new Error(`no measurement for ${target} at c=${connections}`);
  return cell;
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** Per-round ratios of two round entries: their median, and the range it came from. */
export function roundRatio(rounds: Rounds, top: string, bottom: string): { median: number; text: string } {
  const a = rounds.rps[top] ?? [];
  const b = rounds.rps[bottom] ?? [];
  if (a.length === 0 || b.length === 0) throw new Error(`no rounds for ${top} / ${bottom}`);
  const ratios = a.map((rps, i) => rps / b[i]);
  const m = median(ratios);
  return {
    median: m,
    text: `${pct(m)} (median of ${ratios.length} interleaved ${rounds.seconds} s rounds, ${pct(Math.min(...ratios))} to ${pct(Math.max(...ratios))}; median ${median(a).toFixed(0)} / ${median(b).toFixed(0)} req/s)`,
  };
}

const cellRatio = (top: Cell, bottom: Cell): string =>
  `${pct(top.result.rps / bottom.result.rps)} in the ${top.result.seconds.toFixed(0)} s cells below`;

const atLeast = (name: string, r: { median: number; text: string }, goal: number, extra = ''): Check => ({
  name,
  value: `${r.text}${extra}`,
  target: `>= ${pct(goal)}`,
  pass: r.median >= goal,
});

/** The earlier targets, unchanged. */
function earlierChecks(cells: Cell[], rounds: Rounds): Check[] {
  const bare20 = find(cells, 'bare proxy', 20);
  const logged20 = find(cells, 'logged proxy', 20);
  const loggedFailover20 = find(cells, 'logged failover', 20);
  const one20 = find(cells, 'gateway one step', 20);
  const failover20 = find(cells, 'gateway failover', 20);
  const open20 = find(cells, 'gateway circuit open', 20);
  const added = addedP50(rounds, cells);
  const openVsOne = roundRatio(rounds, 'gateway circuit open', 'gateway one step');
  const info = (name: string, top: string, bottom: string, a: Cell, b: Cell): Check => ({
    name,
    value: `${roundRatio(rounds, top, bottom).text}; ${cellRatio(a, b)}`,
    target: '-',
    pass: null,
  });
  return [
    atLeast(
      'one step vs bare proxy, req/s at c=20',
      roundRatio(rounds, 'gateway one step', 'bare proxy'),
      GOALS.oneStepVsBareAtC20,
      `; ${cellRatio(one20, bare20)}`,
    ),
    info(
      'logged proxy (bare proxy + the per-request work every request needs) vs bare proxy, req/s at c=20',
      'logged proxy',
      'bare proxy',
      logged20,
      bare20,
    ),
    info('one step vs logged proxy, req/s at c=20', 'gateway one step', 'logged proxy', one20, logged20),
    {
      name: 'one step p99 at c=20',
      value: `${ms(one20.result.p99)} ms`,
      target: `<= ${GOALS.oneStepP99AtC20Ms} ms`,
      pass: one20.result.p99 <= GOALS.oneStepP99AtC20Ms,
    },
    {
      name: 'added p50 at c=1 (one step - upstream direct)',
      value: added.text,
      target: `<= ${GOALS.addedP50AtC1Ms} ms`,
      pass: added.median <= GOALS.addedP50AtC1Ms,
    },
    atLeast(
      'failover vs one step, req/s at c=20',
      roundRatio(rounds, 'gateway failover', 'gateway one step'),
      GOALS.failoverVsOneStep,
      `; ${cellRatio(failover20, one20)}`,
    ),
    info(
      'logged failover vs logged proxy (the same floor for a request that fails over), req/s at c=20',
      'logged failover',
      'logged proxy',
      loggedFailover20,
      logged20,
    ),
    {
      name: 'circuit open vs one step, req/s at c=20',
      value: `${openVsOne.text}; ${cellRatio(open20, one20)}`,
      target: `within ${pct(GOALS.circuitOpenWithin)} (${pct(1 - GOALS.circuitOpenWithin)} to ${pct(1 + GOALS.circuitOpenWithin)})`,
      pass: Math.abs(openVsOne.median - 1) <= GOALS.circuitOpenWithin,
    },
  ];
}

/** Median over rounds of (gateway first byte p50 - bare stream proxy first byte p50), in ms. */
function firstByteOver(rounds: Rounds, top: string): { median: number; text: string } {
  const a = rounds.firstByteP50[top] ?? [];
  const b = rounds.firstByteP50['bare stream proxy first byte'] ?? [];
  const over = a.map((x, i) => x - b[i]);
  const m = median(over);
  return {
    median: m,
    text: `${ms(m)} ms (median of ${over.length} rounds' p50 differences, ${ms(Math.min(...over))} to ${ms(Math.max(...over))}; median p50 ${ms(median(a))} - ${ms(median(b))} ms)`,
  };
}

/**
 * An added p50 at c=1 (default the one-step gateway's): the median over rounds of (its p50 - the upstream's
 * own p50, measured beside it), with the longer cells' difference beside it.
 */
function addedP50(
  rounds: Rounds,
  cells: Cell[],
  entry = 'gateway one step c=1',
  cellTarget: Target = 'gateway one step',
): { median: number; text: string } {
  const a = rounds.p50[entry] ?? [];
  const b = rounds.p50['upstream direct c=1'] ?? [];
  if (a.length === 0 || b.length === 0) throw new Error(`no rounds for the c=1 p50s of ${entry}`);
  const over = a.map((x, i) => x - b[i]);
  const m = median(over);
  const top1 = find(cells, cellTarget, 1).result.p50;
  const direct1 = find(cells, 'upstream direct', 1).result.p50;
  return {
    median: m,
    text: `${ms(m)} ms (median of ${over.length} rounds' p50 differences, ${ms(Math.min(...over))} to ${ms(Math.max(...over))}; median p50 ${ms(median(a))} - ${ms(median(b))} ms); ${ms(top1 - direct1)} ms in the 10 s cells below (${ms(top1)} - ${ms(direct1)})`,
  };
}

/** The references' added p50 at c=1, beside the gateway's target: the floor a proxy and the required work set. */
function addedP50References(rounds: Rounds, cells: Cell[]): Check[] {
  const references: Array<[what: string, entry: string, target: Target]> = [
    ['bare proxy', 'bare proxy c=1', 'bare proxy'],
    ['logged proxy (bare proxy + the per-request work every request needs)', 'logged proxy c=1', 'logged proxy'],
  ];
  return references.map(([what, entry, target]) => ({
    name: `added p50 at c=1 of the ${what} (- upstream direct)`,
    value: addedP50(rounds, cells, entry, target).text,
    target: '-',
    pass: null,
  }));
}

/**
 * Circuit open in a gateway process of its own (tripped by 500s at boot, serving nothing else) against the
 * one-step gateway's process: the path's cost plus two processes' histories and the host's noise, shown
 * beside the targets above, which compare the two paths in one process.
 */
function separateProcessCircuitOpen(rounds: Rounds): Check[] {
  return (
    [
      ['c=20', 'gateway circuit open', 'gateway one step'],
      ['c=1', 'gateway circuit open c=1', 'gateway one step c=1'],
    ] as const
  ).map(([at, top, bottom]) => ({
    name: `circuit open in a gateway process of its own vs one step, req/s at ${at}`,
    value: roundRatio(rounds, top, bottom).text,
    target: '-',
    pass: null,
  }));
}

/** A figure of paired requests (bench/paired.ts) over the whole run, with its range over the run's blocks. */
function pairedFigure(
  run: PairedRun,
  figure: (f: Record<string, PairedFigures>) => number,
  show: (x: number) => string,
): { value: number; text: string } {
  const value = figure(run.all);
  const blocks = run.blocks.map(figure);
  const count = Math.min(...Object.values(run.all).map((f) => f.count));
  const spread =
    blocks.length > 0
      ? `; ${blocks.length} blocks of consecutive turns: ${show(Math.min(...blocks))} to ${show(Math.max(...blocks))}`
      : '';
  const taken =
    run.inARow > 1
      ? `${count} requests each in ${run.seconds} s, ${run.inARow} in a row a turn of which the first ${run.settling} not kept`
      : `${count} turns in ${run.seconds} s`;
  return { value, text: `${show(value)} (${taken}${spread})` };
}

const msText = (x: number): string => `${ms(x)} ms`;

/** Issue 16's three c=1 targets, each with the figure it is judged by first and the other way of measuring it beside. */
interface C1Targets {
  circuitOpen: Check[];
  firstByte: Check[];
  addedP50: Check[];
}

/**
 * Issue 16's c=1 targets. With paired requests (bench/paired.ts: the entries' requests taken in turns, one at a
 * time, so both sides of a figure see the same moments of the host) they are judged by those, each target's
 * requests in runs, and beside them the same with one request a turn and the medians of the interleaved rounds;
 * without (BENCH_PAIRED_SECONDS=0), by the rounds as before.
 */
function c1Targets(rounds: Rounds, cells: Cell[]): C1Targets {
  const openRounds = roundRatio(rounds, 'gateway circuit open, one-step process c=1', 'gateway one step c=1');
  const firstByteRounds = firstByteOver(rounds, 'gateway stream first byte');
  const addedRounds = addedP50(rounds, cells);
  const openName = '[16] circuit open vs one step, req/s at c=1 (two keys of one gateway process)';
  const firstByteName = '[16] streaming first byte at c=1, p50 over the bare streaming proxy';
  const addedName = '[16] added p50 at c=1 (one step - upstream direct)';
  const judged = (name: string, text: string, target: string, pass: boolean): Check => ({
    name,
    value: text,
    target,
    pass,
  });
  const atMostMs = (goal: number): string => `<= ${goal} ms`;
  const paired = rounds.paired;
  if (!paired)
    return {
      circuitOpen: [atLeast(openName, openRounds, GOALS_16.circuitOpenVsOneStep)],
      firstByte: [
        judged(
          firstByteName,
          firstByteRounds.text,
          atMostMs(GOALS_16.firstByteOverBareMs),
          firstByteRounds.median <= GOALS_16.firstByteOverBareMs,
        ),
      ],
      addedP50: [
        judged(
          addedName,
          addedRounds.text,
          atMostMs(GOALS_16.addedP50AtC1Ms),
          addedRounds.median <= GOALS_16.addedP50AtC1Ms,
        ),
      ],
    };
  const info = (name: string, value: string): Check => ({ name, value, target: '-', pass: null });
  const inRounds = `the same from the interleaved rounds (autocannon cells of ${rounds.seconds} s)`;
  const oneATurn = "with one request a turn (each target's request after the other targets')";
  const cold = paired.oneATurn;
  const over = (top: string, bottom: string) => (f: Record<string, PairedFigures>) => f[top].p50 - f[bottom].p50;
  // at c=1 a target's req/s is one over its mean time per request
  const openRatio = (f: Record<string, PairedFigures>): number =>
    f['gateway one step'].mean / f['gateway circuit open, one-step process'].mean;
  const open = pairedFigure(paired.c1, openRatio, pct);
  const streamOverBare = over('gateway stream', 'bare stream proxy');
  const firstByte = pairedFigure(paired.firstByte, streamOverBare, msText);
  const addedOver = over('gateway one step', 'upstream direct');
  const added = pairedFigure(paired.c1, addedOver, msText);
  const references = [
    ['bare proxy', 'bare proxy'],
    ['logged proxy (bare proxy + the per-request work every request needs)', 'logged proxy'],
  ] as const;
  const loggedStream =
    'streaming first byte at c=1 of the logged stream proxy (bare stream proxy + the per-request work every streamed request needs), p50 over the bare streaming proxy';
  const loggedStreamOver = over('logged stream proxy', 'bare stream proxy');
  return {
    circuitOpen: [
      judged(
        `${openName}, their requests taken in turns: one step's mean time per request / circuit open's`,
        open.text,
        `>= ${pct(GOALS_16.circuitOpenVsOneStep)}`,
        open.value >= GOALS_16.circuitOpenVsOneStep,
      ),
      info(`the same ${oneATurn}`, pairedFigure(cold.c1, openRatio, pct).text),
      info(inRounds, openRounds.text),
    ],
    firstByte: [
      judged(
        `${firstByteName}, the two taken in turns`,
        firstByte.text,
        atMostMs(GOALS_16.firstByteOverBareMs),
        firstByte.value <= GOALS_16.firstByteOverBareMs,
      ),
      info(`the same ${oneATurn}`, pairedFigure(cold.firstByte, streamOverBare, msText).text),
      info(inRounds, firstByteRounds.text),
      info(`${loggedStream}, taken in the same turns`, pairedFigure(paired.firstByte, loggedStreamOver, msText).text),
      info(`the same ${oneATurn}`, pairedFigure(cold.firstByte, loggedStreamOver, msText).text),
    ],
    addedP50: [
      judged(
        `${addedName}, taken in turns with the upstream direct, the bare and the logged proxy`,
        added.text,
        atMostMs(GOALS_16.addedP50AtC1Ms),
        added.value <= GOALS_16.addedP50AtC1Ms,
      ),
      info(`the same ${oneATurn}`, pairedFigure(cold.c1, addedOver, msText).text),
      info(inRounds, addedRounds.text),
      ...references.flatMap(([what, name]) => [
        info(
          `added p50 at c=1 of the ${what} (- upstream direct), taken in the same turns`,
          pairedFigure(paired.c1, over(name, 'upstream direct'), msText).text,
        ),
        info(`the same ${oneATurn}`, pairedFigure(cold.c1, over(name, 'upstream direct'), msText).text),
      ]),
    ],
  };
}

/** Issue 16's targets, then the earlier ones, then the peak RSS, the webhook storm, the baseline and the faults. */
export function checks(cells: Cell[], rounds: Rounds, storm: WebhookStorm | null): Check[] {
  const one20 = find(cells, 'gateway one step', 20);
  const stream20 = find(cells, 'gateway stream', 20);
  const bareStream20 = find(cells, 'bare stream proxy', 20);
  const chunked20 = find(cells, 'bare proxy chunked', 20);
  const loggedStream20 = find(cells, 'logged stream proxy', 20);
  const logged20 = find(cells, 'logged proxy', 20);
  const c1 = c1Targets(rounds, cells);
  const peakRss = Math.max(...cells.filter((c) => c.target.startsWith('gateway')).map((c) => c.peakRssMb ?? 0));
  const faults =
    rounds.faults + cells.reduce((n, c) => n + c.result.non2xx + c.result.errors + c.result.headerMismatches, 0);
  const list: Check[] = [
    atLeast(
      '[16] circuit open vs one step, req/s at c=20 (two keys of one gateway process)',
      roundRatio(rounds, 'gateway circuit open, one-step process', 'gateway one step'),
      GOALS_16.circuitOpenVsOneStep,
    ),
    ...c1.circuitOpen,
    ...separateProcessCircuitOpen(rounds),
    atLeast(
      '[16] failover from a 500ing step vs one step, req/s at c=20',
      roundRatio(rounds, 'gateway failover', 'gateway one step'),
      GOALS_16.failoverVsOneStep,
    ),
    atLeast(
      '[16] failover from a 500ing step vs one step, req/s at c=1',
      roundRatio(rounds, 'gateway failover c=1', 'gateway one step c=1'),
      GOALS_16.failoverVsOneStep,
    ),
    atLeast(
      '[16] streaming one step vs bare streaming proxy, req/s at c=20',
      roundRatio(rounds, 'gateway stream', 'bare stream proxy'),
      GOALS_16.streamVsBareStream,
      `; ${cellRatio(stream20, bareStream20)}`,
    ),
    {
      name: 'logged stream proxy (bare stream proxy + the per-request work every streamed request needs) vs bare stream proxy, req/s at c=20',
      value: `${roundRatio(rounds, 'logged stream proxy', 'bare stream proxy').text}; ${cellRatio(loggedStream20, bareStream20)}`,
      target: '-',
      pass: null,
    },
    {
      name: 'streaming one step vs logged stream proxy, req/s at c=20',
      value: `${roundRatio(rounds, 'gateway stream', 'logged stream proxy').text}; ${cellRatio(stream20, loggedStream20)}`,
      target: '-',
      pass: null,
    },
    ...c1.firstByte,
    atLeast(
      '[16] one step vs bare proxy chunked-answer variant, req/s at c=20',
      roundRatio(rounds, 'gateway one step', 'bare proxy chunked'),
      GOALS_16.oneStepVsBareChunked,
      `; ${cellRatio(one20, chunked20)}`,
    ),
    {
      name: 'logged proxy (bare proxy + the per-request work every request needs) vs bare proxy chunked-answer variant, req/s at c=20',
      value: `${roundRatio(rounds, 'logged proxy', 'bare proxy chunked').text}; ${cellRatio(logged20, chunked20)}`,
      target: '-',
      pass: null,
    },
    {
      name: '[16] one step p99 at c=20',
      value: `${ms(one20.result.p99)} ms`,
      target: `<= ${GOALS_16.oneStepP99AtC20Ms} ms`,
      pass: one20.result.p99 <= GOALS_16.oneStepP99AtC20Ms,
    },
    {
      name: 'p99 at c=20 of the logged proxy (bare proxy + the per-request work every request needs) and of the bare proxy chunked-answer variant, in their cells below',
      value: `${ms(logged20.result.p99)} ms and ${ms(chunked20.result.p99)} ms`,
      target: '-',
      pass: null,
    },
    ...c1.addedP50,
    ...addedP50References(rounds, cells),
    ...earlierChecks(cells, rounds),
    {
      name: 'peak gateway RSS under load (all gateway cells, streaming included)',
      value: `${peakRss.toFixed(0)} MB`,
      target: `<= ${GOALS_16.peakRssMb} MB`,
      pass: peakRss <= GOALS_16.peakRssMb,
    },
  ];
  if (storm)
    list.push({
      name: `[16] webhook deliveries to one subscriber during a ${storm.seconds} s open circuit at c=20 (1 key, ${storm.replicas} replica)`,
      value: `${storm.total} (${storm.duringLoad} during the load, ${storm.served} requests served; closing event coalesced_count ${storm.coalescedCount ?? 'not received'})`,
      target: `${GOALS_16.webhookDeliveries} (1 per key per replica + the closing event)`,
      pass: storm.total === GOALS_16.webhookDeliveries && storm.coalescedCount !== null,
    });
  for (const [what, ours, theirs] of [
    ['one step', 'gateway one step', 'baseline one step'],
    ['streaming one step', 'gateway stream', 'baseline stream'],
    ['failover', 'gateway failover', 'baseline failover'],
  ] as const) {
    if (!rounds.rps[theirs]) continue;
    const r = roundRatio(rounds, ours, theirs);
    list.push({
      name: `BENCH_BASELINE: ${what} of this build vs the baseline build, req/s at c=20`,
      value: r.text,
      // a regression of more than the bound misses; a gain passes
      target: `>= ${pct(1 - GOALS_16.baselineWithin)} (no regression over ${pct(GOALS_16.baselineWithin)})`,
      pass: r.median >= 1 - GOALS_16.baselineWithin,
    });
  }
  list.push({
    name: 'every response 2xx with the expected x-svc-provider-used',
    value: `${faults} non-2xx, socket errors or header mismatches`,
    target: '0',
    pass: faults === 0,
  });
  return list;
}
