import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { projectRoot } from '../src/common/paths';
import { runLoad } from './load';
import type { LoadResult } from './load';
import { createBenchKey, forkHelper, startGateway, BENCH_ADMIN_TOKEN, gatewayEnv } from './processes';
import { renderTargetTable, writeSection } from './results-file';
import type { TargetRow } from './results-file';
import { log, machine, Run, runBenchmark, secondsFromEnv } from './run';
import type { UpstreamUrls } from './upstream';

/**
 * `npm run bench:event-lock` (part of `npm run bench`): failover chat at c=20 while another session holds
 * `gateway_events` in ACCESS EXCLUSIVE mode for the whole measurement (decisions §8: a failover waits at most
 * 250 ms for its event), with coalescing on (the default window) and off (window 0: every request's event
 * meets the lock); then how long the held events take to be stored once the lock ends.
 */

const ROOT = projectRoot();
const GATEWAY_SCRIPT = join(ROOT, 'dist/src/main.js');
const RESULTS_FILE = join(ROOT, 'bench/results.md');
const ADMIN_TOKEN = BENCH_ADMIN_TOKEN;
const CHAT_PATH = '/v1/chat/completions';
const CHAT_BODY = JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'hi' }] });
const CONNECTIONS = 20;
const LOCK_SECONDS = secondsFromEnv('BENCH_LOCK_SECONDS', 10);
const WARMUP_SECONDS = 2;
const TARGET_P99_MS = 300;
const DRAIN_TIMEOUT_MS = 60_000;

interface Cell {
  window: string;
  locked: boolean;
  load: LoadResult;
  /** After a locked cell: seconds from the lock's end until no event was pending, and the events stored by then. */
  drainedAfterS?: number;
  stored?: number;
  pendingAtUnlock?: number;
  /** Events still pending when the drain wait ended (0 unless the database never caught up). */
  pendingAfter?: number;
}

const isUrls = (m: unknown): m is { urls: UpstreamUrls } => typeof m === 'object' && m !== null && 'urls' in m;

const YAML = (urls: UpstreamUrls): string =>
  [
    'providers:',
    '  - name: primary',
    '    kind: openai',
    `    base_url: ${urls.down}`,
    '    api_key: x',
    '  - name: backup',
    '    kind: openai',
    `    base_url: ${urls.ok}`,
    '    api_key: x',
    '',
  ].join('\n');

async function pendingEvents(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).text();
  return Number(/^svc_gateway_events_pending (\d+)/m.exec(text)?.[1] ?? NaN);
}

async function measureWindow(run: Run, urls: UpstreamUrls, window: string): Promise<Cell[]> {
  const label = `event-lock-${window}`;
  const config = join(run.tmp, `${label}.yaml`);
  writeFileSync(config, YAML(urls));
  const database = await run.createDatabase(label.replace(/-/g, '_'));
  const gateway = run.track(
    await startGateway({
      script: GATEWAY_SCRIPT,
      logFile: join(run.tmp, `${label}.log`),
      env: gatewayEnv(database.url, config, {
        // every request really tries the 500ing primary first, then fails over
        SVC_BREAKER_THRESHOLD: '1000000000',
        SVC_FAILOVER_EVENT_WINDOW: window,
      }),
    }),
  );
  const secret = await createBenchKey(gateway.url, 'bench event lock', [
    { provider: 'primary', model: 'bench-model' },
    { provider: 'backup', model: 'bench-model' },
  ]);
  const spec = {
    url: `${gateway.url}${CHAT_PATH}`,
    headers: { authorization: `Bearer ${secret}` },
    body: CHAT_BODY,
    connections: CONNECTIONS,
    expectProvider: 'backup',
  };
  const cells: Cell[] = [];
  try {
    await runLoad({ ...spec, seconds: WARMUP_SECONDS });
    log(`  window ${window}: unlocked`);
    cells.push({ window, locked: false, load: await runLoad({ ...spec, seconds: LOCK_SECONDS }) });

    const locker = new Client({ connectionString: database.url });
    await locker.connect();
    let pendingAtUnlock = NaN;
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE gateway_events IN ACCESS EXCLUSIVE MODE');
      log(`  window ${window}: gateway_events locked for ${LOCK_SECONDS} s`);
      const load = await runLoad({ ...spec, seconds: LOCK_SECONDS });
      pendingAtUnlock = await pendingEvents(gateway.url);
      cells.push({ window, locked: true, load, pendingAtUnlock });
    } finally {
      await locker.query('COMMIT').catch(() => undefined);
      await locker.end();
    }
    const unlocked = Date.now();
    while ((await pendingEvents(gateway.url)) > 0 && Date.now() - unlocked < DRAIN_TIMEOUT_MS) await sleep(100);
    const cell = cells[cells.length - 1];
    cell.drainedAfterS = (Date.now() - unlocked) / 1000;
    cell.pendingAfter = await pendingEvents(gateway.url);
    const counter = new Client({ connectionString: database.url });
    await counter.connect();
    try {
      cell.stored = Number((await counter.query<{ n: string }>(`SELECT count(*) AS n FROM gateway_events`)).rows[0].n);
    } finally {
      await counter.end();
    }
  } finally {
    await gateway.stop();
  }
  return cells;
}

function render(cells: Cell[], rows: TargetRow[]): string {
  const { cores, cpu } = machine();
  const table = [
    '| window | gateway_events | c | req/s | p50 ms | p99 ms | non-2xx | errors | pending at unlock | all stored after unlock | events stored |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...cells.map(
      (c) =>
        `| ${c.window} s | ${c.locked ? `locked ${LOCK_SECONDS} s` : 'free'} | ${CONNECTIONS} | ${c.load.rps.toFixed(0)} | ${c.load.p50.toFixed(2)} | ${c.load.p99.toFixed(2)} | ${c.load.non2xx} | ${c.load.errors} | ${c.pendingAtUnlock ?? '-'} | ${c.drainedAfterS === undefined ? '-' : `${c.drainedAfterS.toFixed(1)} s`} | ${c.stored ?? '-'} |`,
    ),
  ];
  return [
    '## Failover while the events table is locked',
    '',
    'Written by `npm run bench:event-lock` (bench/event-lock.ts).',
    '',
    `- Date: ${new Date().toISOString()}`,
    `- Cores (\`nproc\`): ${cores} (${cpu})`,
    `- Node: ${process.version}`,
    `- Gateway: \`node dist/src/main.js\`, chain \`[primary, backup]\`, primary always answers 500 and \`SVC_BREAKER_THRESHOLD=1000000000\`, so every request fails over; autocannon c=${CONNECTIONS}, ${WARMUP_SECONDS} s warm-up, then ${LOCK_SECONDS} s free and ${LOCK_SECONDS} s with another session holding \`LOCK TABLE gateway_events IN ACCESS EXCLUSIVE MODE\` in an open transaction`,
    '- Window 60 s (the default): one event for the condition, the rest counted in memory; window 0: every request stores its event, waits at most 250 ms for it (decisions §8), and the rest waits in memory until the lock ends',
    '',
    '### Targets',
    '',
    renderTargetTable(rows),
    '',
    '### Results',
    '',
    ...table,
  ].join('\n');
}

async function benchmark(run: Run): Promise<void> {
  const upstream = run.track(await forkHelper(join(__dirname, 'upstream.js'), [], isUrls));
  const cells: Cell[] = [];
  for (const window of ['60', '0']) cells.push(...(await measureWindow(run, upstream.ready.urls, window)));
  const rows: TargetRow[] = cells
    .filter((c) => c.locked)
    .flatMap((c) => [
      {
        figure: `failover chat p99 at c=${CONNECTIONS}, gateway_events locked ${LOCK_SECONDS} s, window ${c.window} s`,
        value: `${c.load.p99.toFixed(2)} ms`,
        target: `<= ${TARGET_P99_MS} ms`,
        pass: c.load.p99 <= TARGET_P99_MS,
      },
      {
        figure: `every answer 200 while locked, window ${c.window} s`,
        value: `${c.load.non2xx} non-2xx, ${c.load.errors} errors`,
        target: '0',
        pass: c.load.non2xx + c.load.errors === 0,
      },
      {
        figure: `events held in memory during the lock, stored after it, window ${c.window} s`,
        value: `${c.pendingAtUnlock} pending at unlock, ${c.pendingAfter} after ${c.drainedAfterS?.toFixed(1)} s (${c.stored} rows stored)`,
        target: `0 pending within ${DRAIN_TIMEOUT_MS / 1000} s`,
        pass: c.pendingAfter === 0,
      },
    ]);
  const body = render(cells, rows);
  writeSection(RESULTS_FILE, 'event-lock', body);
  process.stdout.write(`\n${body}\n\nwritten to ${RESULTS_FILE}\n`);
}

runBenchmark('bench:event-lock', benchmark);
