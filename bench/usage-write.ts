import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { projectRoot } from '../src/common/paths';
import { copyRows } from '../src/database/bulk-copy';
import { dataSourceOptions } from '../src/database/typeorm-options';
import { USAGE_COPY, USAGE_INSERT, usageRow } from '../src/usage/usage-records.repository';
import type { NewUsageRecord } from '../src/usage/usage-records.repository';
import { writeSection } from './results-file';
import { log, machine, runBenchmark, secondsFromEnv } from './run';

/**
 * `npm run bench:usage-write` (part of `npm run bench`): the usage writer's two ways in, on the table as the
 * migrations make it (its primary key and its `(key_id, request_id)` index): one multi-row INSERT of a batch
 * (`INSERT … SELECT FROM jsonb_array_elements($1)`, what the embedded database gets) against one COPY (what a
 * PostgreSQL server gets), in blocks of batches taken in turns. Printed a row: the time the client waited, and
 * the CPU of the PostgreSQL server process that wrote it.
 */

const RESULTS_FILE = join(projectRoot(), 'bench/results.md');
const BATCH_ROWS = 500;
/** Batches per block, and blocks per way (taken in turns: INSERT, COPY, COPY, INSERT, …). */
const BLOCK_BATCHES = 20;
const BLOCKS = Math.round(secondsFromEnv('BENCH_USAGE_BLOCKS', 10));
/** Linux's clock ticks in /proc/<pid>/stat. */
const TICK_US = 10_000;

const record = (n: number): NewUsageRecord => ({
  requestId: `req_${n.toString(36).padStart(20, '0')}`,
  keyId: 'key_0123456789abcdefghij',
  capability: 'chat',
  requestedModel: 'bench-model',
  provider: 'primary',
  model: 'bench-model',
  fallbackLevel: 0,
  status: 200,
  latencyMs: 3,
  attempts: [{ provider: 'primary', model: 'bench-model', level: 0, outcome: 'ok', latency_ms: 2 }],
  promptTokens: 5,
  completionTokens: 7,
  totalTokens: 12,
  characters: null,
});

/** user + system CPU of a process, in µs (as coarse as the kernel's clock tick). */
function cpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

interface Way {
  name: string;
  write(rows: unknown[][]): Promise<unknown>;
  waitUs: number;
  serverUs: number;
  rows: number;
}

runBenchmark('bench:usage-write', async (run) => {
  const database = await run.createDatabase('usage-write');
  const schema = new DataSource(dataSourceOptions(database.url, { poolSize: 1 }));
  await schema.initialize();
  await schema.runMigrations();
  await schema.destroy();
  // one connection: every statement runs in the one server process whose CPU is read
  const pool = new Pool({ connectionString: database.url, max: 1 });
  try {
    const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const server = rows[0].pid;
    let n = 0;
    const batch = (): unknown[][] => Array.from({ length: BATCH_ROWS }, () => usageRow(record(n++)));
    const ways: Way[] = [
      {
        name: 'INSERT … jsonb_array_elements',
        write: (r) => pool.query(USAGE_INSERT.query(r)),
        waitUs: 0,
        serverUs: 0,
        rows: 0,
      },
      { name: 'COPY … FROM STDIN', write: (r) => copyRows(pool, USAGE_COPY, r), waitUs: 0, serverUs: 0, rows: 0 },
    ];
    const block = async (way: Way, keep: boolean): Promise<void> => {
      const batches = Array.from({ length: BLOCK_BATCHES }, batch);
      const cpuBefore = cpuUs(server);
      const started = performance.now();
      for (const rows of batches) await way.write(rows);
      if (!keep) return;
      way.waitUs += (performance.now() - started) * 1000;
      way.serverUs += cpuUs(server) - cpuBefore;
      way.rows += BLOCK_BATCHES * BATCH_ROWS;
    };
    for (const way of ways) await block(way, false);
    for (let b = 0; b < BLOCKS; b++) for (const way of b % 2 === 0 ? ways : [...ways].reverse()) await block(way, true);
    const { rows: count } = await pool.query<{ n: string }>('SELECT count(*) AS n FROM usage_records');
    if (Number(count[0].n) !== n) throw new Error(`${count[0].n} rows stored of ${n} written`);
    const perRow = (us: number, way: Way): string => (us / way.rows).toFixed(1);
    const [insert, copy] = ways;
    const table = [
      '| way | rows | client waited, µs a row | server process CPU, µs a row |',
      '|---|---|---|---|',
      ...ways.map((w) => `| ${w.name} | ${w.rows} | ${perRow(w.waitUs, w)} | ${perRow(w.serverUs, w)} |`),
    ].join('\n');
    const info = machine();
    const summary = `COPY against INSERT: ${((100 * copy.waitUs) / insert.waitUs).toFixed(1)} % of the wait, ${((100 * copy.serverUs) / insert.serverUs).toFixed(1)} % of the server's CPU`;
    writeSection(
      RESULTS_FILE,
      'usage-write',
      [
        '## Usage writes: COPY against INSERT',
        '',
        'Written by `npm run bench:usage-write` (bench/usage-write.ts).',
        '',
        `- Date: ${new Date().toISOString()}`,
        `- Cores (\`nproc\`): ${info.cores} (${info.cpu})`,
        `- The \`usage_records\` table as the migrations make it; batches of ${BATCH_ROWS} rows over one connection, ${BLOCK_BATCHES} batches a block, ${BLOCKS} blocks each way taken in turns (after one unmeasured block each); the server's CPU from /proc (10 ms ticks)`,
        '',
        table,
        '',
        summary,
      ].join('\n'),
    );
    log(`\n${table}\n\n${summary}\nwritten to ${RESULTS_FILE}`);
  } finally {
    await pool.end();
  }
});
