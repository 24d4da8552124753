import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { projectRoot } from '../src/common/paths';
import { childPids, createBenchKey, rssMb, startGateway, BENCH_ADMIN_TOKEN } from './processes';
import { renderTargetTable, writeSection } from './results-file';
import type { TargetRow } from './results-file';
import { log, machine, Run, runBenchmark, secondsFromEnv } from './run';

/**
 * `npm run bench:memory` (part of `npm run bench`): the memory an operator sees in each mode — the
 * embedded database (no DATABASE_URL, as `npm start` on a fresh machine) and a PostgreSQL server — idle
 * after start, then idle again after the first speech (which starts the audio workers' engine). Counted:
 * the gateway process and every process it started (the audio workers), RSS summed.
 */

const ROOT = projectRoot();
const GATEWAY_SCRIPT = join(ROOT, 'dist/src/main.js');
const RESULTS_FILE = join(ROOT, 'bench/results.md');
const ADMIN_TOKEN = BENCH_ADMIN_TOKEN;
const SETTLE_SECONDS = secondsFromEnv('BENCH_SETTLE_SECONDS', 10);
/** What the README promises for a gateway with its audio workers, idle after speech, with a PostgreSQL server. */
const TARGET_SERVER_MB = 300;

interface Sample {
  gatewayMb: number;
  workersMb: number;
  workers: number;
}

/** The gateway's RSS and that of its child processes (the audio workers). */
function sample(pid: number): Sample {
  const children = childPids(pid);
  const workersMb = children.reduce((sum, child) => sum + (rssMb(child) ?? 0), 0);
  return { gatewayMb: rssMb(pid) ?? NaN, workersMb, workers: children.length };
}

async function measure(
  run: Run,
  mode: 'embedded' | 'server',
): Promise<{ mode: string; idle: Sample; afterSpeech: Sample }> {
  const env: Record<string, string> = {
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    SVC_ADMIN_TOKEN: ADMIN_TOKEN,
    SVC_DEMO_KEY: 'false',
  };
  if (mode === 'server') env.DATABASE_URL = (await run.createDatabase('memory')).url;
  else env.SVC_DATA_DIR = mkdtempSync(join(run.tmp, 'embedded-'));
  // the embedded mode is chosen by the absence of DATABASE_URL, which the bench's own environment may carry
  const inherited = process.env.DATABASE_URL;
  if (mode === 'embedded') delete process.env.DATABASE_URL;
  const gateway = await startGateway({
    script: GATEWAY_SCRIPT,
    env,
    logFile: join(run.tmp, `memory-${mode}.log`),
  }).finally(() => {
    if (inherited !== undefined) process.env.DATABASE_URL = inherited;
  });
  run.track(gateway);
  await sleep(SETTLE_SECONDS * 1000);
  const idle = sample(gateway.pid);
  const secret = await createBenchKey(gateway.url, 'memory', [{ provider: 'espeak', model: 'speech-02-hd' }]);
  const speech = await fetch(`${gateway.url}/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'speech-02-hd',
      text: 'How much memory does the gateway hold when it is idle?',
      voice_setting: { voice_id: 'en-us' },
    }),
  });
  if (speech.status !== 200) throw new Error(`speech answered ${speech.status}`);
  await speech.arrayBuffer();
  await sleep(SETTLE_SECONDS * 1000);
  const afterSpeech = sample(gateway.pid);
  await gateway.stop();
  return { mode, idle, afterSpeech };
}

runBenchmark('memory benchmark', async (run) => {
  const { cores, cpu } = machine();
  const results = [];
  for (const mode of ['embedded', 'server'] as const) {
    log(`memory: ${mode} mode`);
    results.push(await measure(run, mode));
  }
  const total = (s: Sample): number => s.gatewayMb + s.workersMb;
  const fmt = (s: Sample): string =>
    `${total(s).toFixed(0)} (gateway ${s.gatewayMb.toFixed(0)} + ${s.workers} worker(s) ${s.workersMb.toFixed(0)})`;
  const server = results.find((r) => r.mode === 'server')!;
  const rows: TargetRow[] = [
    {
      figure: 'idle after speech, with DATABASE_URL: gateway and audio workers (MB RSS)',
      value: total(server.afterSpeech).toFixed(0),
      target: `<= ${TARGET_SERVER_MB}`,
      pass: total(server.afterSpeech) <= TARGET_SERVER_MB,
    },
  ];
  const lines = [
    '## Memory of each mode',
    '',
    'Written by `npm run bench:memory` (bench/memory.ts).',
    '',
    `- Date: ${new Date().toISOString()}`,
    `- Cores (\`nproc\`): ${cores} (${cpu}); Node ${process.version}`,
    `- Gateway: \`node dist/src/main.js\` with the start script's flags and the offline configuration; RSS of the gateway process plus every process it started (the audio workers), ${SETTLE_SECONDS} s after start, then ${SETTLE_SECONDS} s after one short speech request`,
    '- Embedded: no `DATABASE_URL` (PGlite runs inside the gateway process); server: a PostgreSQL database on this machine (its own memory is not counted)',
    '',
    '| mode | idle after start, MB | idle after the first speech, MB |',
    '|---|---|---|',
    ...results.map(
      (r) =>
        `| ${r.mode === 'embedded' ? 'embedded database' : 'DATABASE_URL'} | ${fmt(r.idle)} | ${fmt(r.afterSpeech)} |`,
    ),
    '',
    '### Targets',
    '',
    renderTargetTable(rows),
  ];
  const body = lines.join('\n');
  process.stdout.write(`${body}\n`);
  writeSection(RESULTS_FILE, 'memory', body);
});
