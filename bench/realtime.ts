import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { WebSocket } from 'ws';
import { projectRoot } from '../src/common/paths';
import { realtimePath } from '../src/providers/openai-realtime';
import { socketUrl } from '../src/providers/upstream-socket';
import { cpuBetween, snapshot, type Roles } from './cpu';
import { measureFirstByte } from './first-byte';
import { percentile } from './load';
import { childPids, createBenchKey, forkHelper, gatewayEnv, startGateway } from './processes';
import { writeSection } from './results-file';
import { log, machine, runBenchmark, secondsFromEnv, type Run } from './run';
import { isUrl } from './speech-gateway';

/**
 * Sync speech through an `openai` step with a realtime model (the Realtime WebSocket, one per request) beside one
 * with an `/audio/speech` model, both against the e2e fakes on one host: time to the first audio byte at c=1, and
 * the CPU the gateway and its audio workers spend per request. Then the Realtime handshake alone (connect to
 * `session.created`), which is what a pool of open sessions could save at most. Printed, no target; about a minute.
 */

const ROOT = projectRoot();
const RESULTS_FILE = join(ROOT, 'bench/results.md');
const SECONDS = secondsFromEnv('BENCH_REALTIME_SECONDS', 8);
const WARMUP_SECONDS = 2;
const HANDSHAKES = 200;
/** Linux's USER_HZ: /proc counts CPU time in hundredths of a second. */
const MS_PER_JIFFY = 10;
const TEXT = 'The realtime benchmark reads this short sentence aloud.';
const STEPS = [
  { label: '/audio/speech step (gpt-4o-mini-tts)', provider: 'oa-speech', model: 'gpt-4o-mini-tts' },
  { label: 'Realtime step (gpt-realtime-2.1-mini)', provider: 'oa-realtime', model: 'gpt-realtime-2.1-mini' },
] as const;
const FORMATS = ['mp3', 'pcm'] as const;

interface Cell {
  step: string;
  format: string;
  responses: number;
  faults: number;
  p50: number;
  p99: number;
  cpuMsPerRequest: number;
  otherCores: number;
}

/** Connect, upgrade and the server's first event, one after another: a session's set-up cost on loopback. */
async function handshakes(url: string, count: number): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const socket = new WebSocket(url, { headers: { authorization: 'Bearer x' }, perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      socket.once('message', () => resolve());
      socket.once('error', reject);
    });
    times.push(performance.now() - started);
    socket.terminate();
  }
  const sorted = Float64Array.from(times).sort();
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

async function benchmark(run: Run): Promise<void> {
  const { cores } = machine();
  const loadAtStart = loadavg()[0];
  const dist = join(ROOT, 'dist');
  const upstream = run.track(await forkHelper(join(dist, 'bench/realtime-upstream.js'), [], isUrl));
  const baseUrl = upstream.ready.url;
  log(`upstream: fake OpenAI (audio/speech and Realtime) at ${baseUrl}`);
  const config = join(run.tmp, 'gateway-realtime.yaml');
  const provider = (name: string): string =>
    `  - name: ${name}\n    kind: openai\n    base_url: ${baseUrl}\n    api_key: x\n`;
  writeFileSync(config, `providers:\n${provider('oa-speech')}${provider('oa-realtime')}`);
  const database = await run.createDatabase('realtime');
  const gateway = run.track(
    await startGateway({
      script: join(dist, 'src/main.js'),
      logFile: join(run.tmp, 'gateway-realtime.log'),
      env: gatewayEnv(database.url, config),
    }),
  );
  const roles = (): Roles => ({
    gateway: [gateway.pid, ...childPids(gateway.pid)],
    upstream: upstream.child.pid === undefined ? [] : [upstream.child.pid],
    generator: [process.pid],
  });

  const cells: Cell[] = [];
  for (const step of STEPS) {
    const secret = await createBenchKey(gateway.url, step.provider, [{ provider: step.provider, model: step.model }]);
    const headers = { authorization: `Bearer ${secret}` };
    for (const format of FORMATS) {
      const body = JSON.stringify({ model: step.model, input: TEXT, voice: 'alloy', response_format: format });
      const url = `${gateway.url}/v1/audio/speech`;
      await measureFirstByte(url, headers, body, WARMUP_SECONDS);
      const before = snapshot(roles());
      const result = await measureFirstByte(url, headers, body, SECONDS);
      const after = snapshot(roles());
      const spent = after.roles.gateway - before.roles.gateway;
      cells.push({
        step: step.label,
        format,
        responses: result.responses,
        faults: result.faults,
        p50: result.p50,
        p99: result.p99,
        cpuMsPerRequest: (spent * MS_PER_JIFFY) / Math.max(1, result.responses),
        otherCores: cpuBetween(before, after, cores).other,
      });
      log(`  ${step.label} ${format}: first audio p50 ${result.p50.toFixed(2)} ms, ${result.responses} requests`);
    }
  }
  const setUp = await handshakes(socketUrl(baseUrl, realtimePath('gpt-realtime-2.1-mini')), HANDSHAKES);
  await gateway.stop();

  const table = [
    '| step | format | requests (faults) | first audio p50 (ms) | p99 (ms) | gateway + workers CPU per request (ms) | other cores |',
    '|---|---|---|---|---|---|---|',
    ...cells.map(
      (c) =>
        `| ${c.step} | ${c.format} | ${c.responses} (${c.faults}) | ${c.p50.toFixed(2)} | ${c.p99.toFixed(2)} | ${c.cpuMsPerRequest.toFixed(2)} | ${c.otherCores.toFixed(2)} |`,
    ),
  ].join('\n');
  const handshake = `Realtime session set-up alone (connect, upgrade, \`session.created\`; ${HANDSHAKES} in a row, loopback, no TLS): p50 ${setUp.p50.toFixed(2)} ms, p99 ${setUp.p99.toFixed(2)} ms.`;
  const section = [
    '## Realtime speech step',
    '',
    `${new Date().toISOString()}, ${cores} cores, Node ${process.version}, load ${loadAtStart.toFixed(2)} → ${loadavg()[0].toFixed(2)}. ` +
      `OpenAI-shaped sync speech of a ${TEXT.length}-character sentence at c=1 for ${SECONDS} s per cell (${WARMUP_SECONDS} s warm-up), against the e2e fakes (no network, no model time). No target.`,
    '',
    table,
    '',
    handshake,
  ].join('\n');
  writeSection(RESULTS_FILE, 'realtime', section);
  process.stdout.write(`\n${table}\n\n${handshake}\nwritten to ${RESULTS_FILE}\n`);
}

runBenchmark('bench:realtime', benchmark);
