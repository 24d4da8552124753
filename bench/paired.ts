import { performance } from 'node:perf_hooks';
import { Client } from 'undici';
import { percentile } from './load';

/**
 * Paired requests at concurrency 1: several targets served one request at a time, in turns (A B C, then
 * C B A, …), each over its own keep-alive connection. In each turn a target gets `inARow` requests one after
 * another, as a c=1 client sends them, and the first `settling` of those are not kept: they meet the process
 * as the other targets' requests left the machine's caches, which no client of one gateway does (with one
 * request a turn, a larger process paid for it the most: docs/performance.md). Two targets' runs are
 * then a few tens of milliseconds apart, so a slow spell of the shared host falls on every target alike, where
 * 3 s rounds still differ by tens of percent with the host's state. At c=1 a target's req/s is one over its
 * mean time per request, so the ratio of two targets' means is the ratio of their req/s at c=1.
 */

export interface PairedTarget {
  name: string;
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Time to the first body chunk (the first SSE event; headers alone do not count) instead of the whole answer. */
  firstByte?: boolean;
  /** When set, every answer must carry `x-svc-provider-used` with this value. */
  expectProvider?: string;
}

export interface PairedFigures {
  count: number;
  /** Milliseconds. */
  p50: number;
  mean: number;
}

export interface PairedOptions {
  /** Turns before the kept ones (default 1 s). */
  warmupSeconds?: number;
  /** The run is cut in this many equal parts for a figure's spread (default 10). */
  blocks?: number;
  /** Requests to a target one after another in each turn (default 1). */
  inARow?: number;
  /** Of those, the first ones not kept (default 0). */
  settling?: number;
}

/**
 * How the c=1 figures are taken (bench:chat's judged ones, bench:chat-ab's): 3 s of turns first (a first block ran
 * slower in trials with 1 s), 10 blocks for a figure's spread, 20 requests in a row a turn, the first 5 not kept.
 */
export const IN_RUNS: PairedOptions = { warmupSeconds: 3, blocks: 10, inARow: 20, settling: 5 };

export interface PairedRun {
  seconds: number;
  inARow: number;
  settling: number;
  /** Each target's figures over the whole run. */
  all: Record<string, PairedFigures>;
  /** The same per block of consecutive turns (the run cut in `blocks` equal parts), for the spread of a figure. */
  blocks: Array<Record<string, PairedFigures>>;
  /** Non-2xx answers and answers without the expected provider header. */
  faults: number;
}

const PROVIDER_HEADER = 'x-svc-provider-used';

function figures(times: number[]): PairedFigures {
  const sorted = Float64Array.from(times).sort();
  const sum = times.reduce((a, b) => a + b, 0);
  return { count: times.length, p50: percentile(sorted, 50), mean: times.length > 0 ? sum / times.length : NaN };
}

/** One request; its time in ms (to the whole answer, or to its first body chunk), and whether it was as expected. */
async function timed(client: Client, target: PairedTarget, path: string): Promise<{ ms: number; ok: boolean }> {
  const started = performance.now();
  const res = await client.request({
    method: 'POST',
    path,
    headers: { 'content-type': 'application/json', ...target.headers },
    body: target.body,
  });
  let ms = NaN;
  for await (const _chunk of res.body) if (Number.isNaN(ms) && target.firstByte) ms = performance.now() - started;
  if (!target.firstByte) ms = performance.now() - started;
  const provider = res.headers[PROVIDER_HEADER];
  const ok =
    res.statusCode >= 200 &&
    res.statusCode < 300 &&
    (target.expectProvider === undefined || provider === target.expectProvider);
  return { ms, ok };
}

/** Turns of `inARow` requests per target for `seconds` (after `warmupSeconds` of the same, not kept). */
export async function pairedRequests(
  targets: PairedTarget[],
  seconds: number,
  options: PairedOptions = {},
): Promise<PairedRun> {
  const blocks = options.blocks ?? 10;
  const inARow = options.inARow ?? 1;
  const settling = options.settling ?? 0;
  if (!(settling < inARow)) throw new Error(`paired requests: ${settling} settling of ${inARow} in a row keeps none`);
  const clients = targets.map((t) => new Client(new URL(t.url).origin));
  const paths = targets.map((t) => new URL(t.url).pathname);
  /** Per turn, each target's kept times. */
  const turns: number[][][] = [];
  let faults = 0;
  try {
    const turn = async (index: number, keep: boolean): Promise<void> => {
      // forwards on even turns, backwards on odd ones: no target always follows the same one
      const order = index % 2 === 0 ? targets.map((_, i) => i) : targets.map((_, i) => targets.length - 1 - i);
      const times = targets.map((): number[] => []);
      for (const i of order)
        for (let n = 0; n < inARow; n++) {
          const { ms, ok } = await timed(clients[i], targets[i], paths[i]);
          if (keep && !ok) faults += 1;
          if (n >= settling) times[i].push(ms);
        }
      if (keep) turns.push(times);
    };
    const warmUntil = performance.now() + (options.warmupSeconds ?? 1) * 1000;
    for (let i = 0; performance.now() < warmUntil; i++) await turn(i, false);
    const until = performance.now() + seconds * 1000;
    for (let i = 0; performance.now() < until; i++) await turn(i, true);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
  const of = (from: number, to: number): Record<string, PairedFigures> =>
    Object.fromEntries(targets.map((t, i) => [t.name, figures(turns.slice(from, to).flatMap((times) => times[i]))]));
  const size = Math.floor(turns.length / blocks);
  return {
    seconds,
    inARow,
    settling,
    all: of(0, turns.length),
    blocks: size > 0 ? Array.from({ length: blocks }, (_, b) => of(b * size, (b + 1) * size)) : [],
    faults,
  };
}
