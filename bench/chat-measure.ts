import { setTimeout as sleep } from 'node:timers/promises';
import { cpuBetween, Roles, snapshot, waitForQuiet } from './cpu';
import { runLoad } from './load';
import type { LoadResult } from './load';
import { ask, watchRss } from './processes';
import type { Forked } from './processes';
import type { Cell, Target } from './report';
import { log, machine, Run, secondsFromEnv } from './run';
import type { UpstreamCounts, UpstreamUrls } from './upstream';

/** One target's long cells (warm-up, then a measured run at c=1 and at c=20), with CPU, RSS and upstream calls. */

export const CONCURRENCY = [1, 20] as const;
const SETTLE_MS = 500;
/** Before each cell, wait (bounded) until other people's processes use less than this many cores. */
const QUIET_CORES = 0.15;
/** BENCH_QUIET_WAIT_SECONDS: how long to wait for that (default 60 s; e.g. 0.1 for a smoke run on a busy machine). */
const QUIET_WAIT_MS = secondsFromEnv('BENCH_QUIET_WAIT_SECONDS', 60) * 1000;

export const WARMUP_SECONDS = secondsFromEnv('BENCH_WARMUP_SECONDS', 2);
export const MEASURE_SECONDS = secondsFromEnv('BENCH_SECONDS', 10);

export const isUrls = (m: unknown): m is { urls: UpstreamUrls } => typeof m === 'object' && m !== null && 'urls' in m;
const isCounts = (m: unknown): m is { counts: UpstreamCounts } => typeof m === 'object' && m !== null && 'counts' in m;
export const isProxyUrl = (m: unknown): m is { url: string } => typeof m === 'object' && m !== null && 'url' in m;

export interface Subject {
  target: Target;
  url: string;
  headers: Record<string, string>;
  /** The request body (JSON, or the same asking for a stream). */
  body: string;
  expectProvider?: string;
  /** The process under test, for its RSS and CPU. */
  pid?: number;
  /** The gateway's database, for the CPU of its PostgreSQL backends. */
  database?: string;
}

/** Warm-up then measurement at each concurrency, with the fakes' request counts and the CPU split around the measurement. */
export async function measure(run: Run, upstream: Forked<{ urls: UpstreamUrls }>, subject: Subject): Promise<Cell[]> {
  const counts = async (): Promise<UpstreamCounts> => (await ask(upstream.child, 'counts', isCounts)).counts;
  const { cores } = machine();
  let database: number[] = [];
  const roles = (): Roles => ({
    generator: [process.pid],
    upstream: upstream.child.pid === undefined ? [] : [upstream.child.pid],
    subject: subject.pid === undefined ? [] : [subject.pid],
    database,
  });
  const refreshDatabase = async (): Promise<void> => {
    if (subject.database) database = [...new Set([...database, ...(await run.backendPids(subject.database))])];
  };
  const cells: Cell[] = [];
  for (const connections of CONCURRENCY) {
    const spec = {
      url: subject.url,
      headers: subject.headers,
      body: subject.body,
      connections,
      expectProvider: subject.expectProvider,
    };
    await refreshDatabase();
    const quietOther = await waitForQuiet(roles, cores, QUIET_CORES, QUIET_WAIT_MS);
    const rss = subject.pid === undefined ? null : watchRss(subject.pid);
    await runLoad({ ...spec, seconds: WARMUP_SECONDS });
    await refreshDatabase();
    const before = await counts();
    const cpuBefore = snapshot(roles());
    const result: LoadResult = await runLoad({ ...spec, seconds: MEASURE_SECONDS });
    await refreshDatabase();
    const cpu = cpuBetween(cpuBefore, snapshot(roles()), cores);
    const after = await counts();
    const peakRssMb = rss ? rss.stop() : null;
    const per = (n: number): number => (result.responses > 0 ? n / result.responses : 0);
    cells.push({
      target: subject.target,
      connections,
      result,
      peakRssMb,
      upstreamPerResponse: [per(after.ok - before.ok), per(after.down - before.down)],
      cpu,
      quietOther,
    });
    log(
      `  ${subject.target} c=${connections}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms, ` +
        `non-2xx ${result.non2xx}, errors ${result.errors}, header mismatches ${result.headerMismatches}` +
        `${peakRssMb === null ? '' : `, RSS ${peakRssMb.toFixed(0)} MB`}, other processes ${cpu.other.toFixed(2)} cores`,
    );
    await sleep(SETTLE_MS);
  }
  return cells;
}
