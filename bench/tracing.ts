import { join } from 'node:path';
import { projectRoot } from '../src/common/paths';
import { OtlpReceiver } from '../test/fakes/otlp-receiver';
import { median } from './ab-rounds';
import { isUrls } from './chat-measure';
import { processCpuSeconds } from './cpu';
import { baselineScript, bootGateway, CHAT_BODY, CHAT_PATH, MODES, type BootedGateway } from './chat-modes';
import { runLoad } from './load';
import { forkHelper } from './processes';
import { profiledLoad } from './profiled-load';
import { renderTargetTable, writeSection, type TargetRow } from './results-file';
import { log, machine, runBenchmark, secondsFromEnv } from './run';

/**
 * `npm run bench:tracing` (decisions §12): one-step chat at c=20 through gateways that differ only in their traces:
 * off, on at ratio 1.0 exporting OTLP/protobuf to a local receiver, and on at ratio 0.01 (and, with `BENCH_BASELINE`,
 * a build from before traces existed). Each case in short cells, the gateways' order turned every round so a slow
 * spell of the shared host falls on all; throughput is the median over the rounds, p50 the median of the cells'
 * p50s. The cost per span is the extra time per request at 1.0 over its spans (one SERVER, one CLIENT).
 * `-- --profile=<ratio>` (e.g. `--profile=0.01`; `--profile=off` for none) instead runs one gateway at that ratio under
 * `node --cpu-prof` for 10 s at c=20 and prints where its time goes.
 * Env: BENCH_TRACING_ROUNDS (4), BENCH_TRACING_SECONDS (5), BENCH_NO_WRITE=1 (print only); BENCH_BASELINE_RATIO
 * (`1.0` or `0.01`) runs the BENCH_BASELINE build with traces on at that ratio instead of off, to A/B a change to the
 * traces themselves against the same ratio here (BENCH_BASELINE_LABEL names it).
 */

const RESULTS_FILE = join(projectRoot(), 'bench/results.md');
const ROUNDS = Math.round(secondsFromEnv('BENCH_TRACING_ROUNDS', 4));
const SECONDS = secondsFromEnv('BENCH_TRACING_SECONDS', 5);
const CONNECTIONS = 20;
/** BENCH_BASELINE_RATIO: the ratio the baseline build is traced at (unset: it runs with traces off). */
const BASELINE_RATIO = ((ratio) => {
  if (ratio !== undefined && ratio !== '1.0' && ratio !== '0.01')
    throw new Error(`BENCH_BASELINE_RATIO is 1.0 or 0.01, not ${ratio}`);
  return ratio ?? null;
})(process.env.BENCH_BASELINE_RATIO);
/** A one-step request's spans: its SERVER span and the one attempt's CLIENT span. */
const SPANS_PER_REQUEST = 2;

interface Case {
  name: string;
  booted: BootedGateway;
  rps: number[];
  p50: number[];
  /** The gateway's CPU time (every thread: GC helpers and the exporter too) per answered request, µs. */
  cpuUs: number[];
}

const tracedEnv = (receiver: OtlpReceiver, ratio: string): Record<string, string> => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
  OTEL_TRACES_SAMPLER_ARG: ratio,
});

async function cell(c: Case, seconds: number): Promise<void> {
  const cpuBefore = processCpuSeconds(c.booted.gateway.pid);
  const result = await runLoad({
    url: `${c.booted.gateway.url}${CHAT_PATH}`,
    headers: { authorization: `Bearer ${c.booted.secret}` },
    body: CHAT_BODY,
    connections: CONNECTIONS,
    seconds,
    expectProvider: MODES['one-step'].servedBy,
  });
  if (result.non2xx + result.errors + result.headerMismatches > 0)
    throw new Error(
      `${c.name}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.headerMismatches} mismatches`,
    );
  c.rps.push(result.rps);
  c.p50.push(result.p50);
  c.cpuUs.push(((processCpuSeconds(c.booted.gateway.pid) - cpuBefore) * 1e6) / Math.max(1, result.responses));
}

function rows(cases: Case[], spansPerSecond: number): TargetRow[] {
  const [off, full, sampled, before] = cases;
  const rps = (c: Case): number => median(c.rps);
  const p50 = (c: Case): number => median(c.p50);
  const share = (c: Case): number => rps(c) / rps(off);
  // each round's own ratio (its cells ran back to back): how far the host's noise moves the figure within one run
  const roundsOf = (c: Case, reference: Case): string => {
    const shares = c.rps.map((r, i) => (r / reference.rps[i]) * 100);
    return `rounds ${Math.min(...shares).toFixed(0)} to ${Math.max(...shares).toFixed(0)} %`;
  };
  const rounds = (c: Case): string => roundsOf(c, off);
  const cpu = (c: Case): number => median(c.cpuUs);
  const figure = (c: Case): string =>
    `${rps(c).toFixed(0)} req/s, p50 ${p50(c).toFixed(2)} ms, ${cpu(c).toFixed(0)} µs CPU a request`;
  // the extra time a request took at 1.0, over its spans: the event loop's price of one span made and exported
  const perSpanUs = ((1 / rps(full) - 1 / rps(off)) * 1e6) / SPANS_PER_REQUEST;
  // the same from the gateway's CPU time (every thread), which the other processes of a shared host move less
  const perSpanCpuUs = (cpu(full) - cpu(off)) / SPANS_PER_REQUEST;
  const out: TargetRow[] = [
    { figure: 'off: one step c=20', value: figure(off), target: 'reference', pass: null },
    {
      figure: 'on, ratio 1.0: one step c=20',
      value: `${figure(full)} (${(share(full) * 100).toFixed(1)} % of off; ${rounds(full)})`,
      target: '≥ 70 % of off',
      pass: share(full) >= 0.7,
    },
    {
      figure: 'on, ratio 1.0: cost per span',
      value:
        `${perSpanUs.toFixed(1)} µs of throughput, ${perSpanCpuUs.toFixed(1)} µs of gateway CPU ` +
        `(${SPANS_PER_REQUEST} spans a request; ${spansPerSecond.toFixed(0)} spans/s received)`,
      target: 'printed',
      pass: null,
    },
    {
      figure: 'on, ratio 0.01: one step c=20',
      value: `${figure(sampled)} (${(share(sampled) * 100).toFixed(1)} % of off; ${rounds(sampled)})`,
      target: '≥ 97 % of off',
      pass: share(sampled) >= 0.97,
    },
  ];
  if (before && BASELINE_RATIO) {
    const same = BASELINE_RATIO === '1.0' ? full : sampled;
    out.push({
      figure: `on, ratio ${BASELINE_RATIO}, against ${process.env.BENCH_BASELINE_LABEL ?? 'BENCH_BASELINE'}`,
      value: `${figure(before)}; this build is ${((rps(same) / rps(before)) * 100).toFixed(1)} % of it`,
      target: 'printed',
      pass: null,
    });
  } else if (before)
    out.push({
      figure: 'off against the build before traces',
      value: `${figure(before)}; off is ${((rps(off) / rps(before)) * 100).toFixed(1)} % of it (${roundsOf(off, before)})`,
      target: '≈ 100 % (within noise)',
      pass: rps(off) / rps(before) >= 0.95,
    });
  return out;
}

/** The ratio `--profile=<ratio>` names ('off': traces off); null without the flag. */
function profiledRatio(argv: string[]): string | null {
  const flag = argv.find((a) => a === '--profile' || a.startsWith('--profile='));
  if (!flag) return null;
  const ratio = flag.includes('=') ? flag.slice(flag.indexOf('=') + 1) : '0.01';
  if (ratio !== 'off' && !(Number(ratio) >= 0 && Number(ratio) <= 1))
    throw new Error(`--profile takes a sampling ratio in [0, 1] or off, not ${ratio}`);
  return ratio;
}

runBenchmark('bench:tracing', async (run) => {
  const upstream = run.track(await forkHelper(join(__dirname, 'upstream.js'), [], isUrls));
  const urls = upstream.ready.urls;
  const receiver = await OtlpReceiver.start({ countOnly: true });
  run.track({ stop: () => receiver.close() });
  const ratio = profiledRatio(process.argv.slice(2));
  if (ratio !== null)
    return profiledLoad(
      (nodeArgs) =>
        bootGateway(run, urls, 'one-step', {
          label: 'tracing-profile',
          env: ratio === 'off' ? {} : tracedEnv(receiver, ratio),
          nodeArgs,
        }),
      {
        what: `one step with traces ${ratio === 'off' ? 'off' : `at ratio ${ratio}`}`,
        path: CHAT_PATH,
        body: CHAT_BODY,
        connections: CONNECTIONS,
        expectProvider: MODES['one-step'].servedBy,
        warmupSeconds: 2,
        seconds: 10,
      },
    );
  const boot = (label: string, env: Record<string, string>, script?: string): Promise<BootedGateway> =>
    bootGateway(run, urls, 'one-step', { label, env, script });
  const cases: Case[] = [
    { name: 'off', booted: await boot('tracing-off', {}) },
    { name: 'on 1.0', booted: await boot('tracing-full', tracedEnv(receiver, '1.0')) },
    { name: 'on 0.01', booted: await boot('tracing-sampled', tracedEnv(receiver, '0.01')) },
  ].map((c) => ({ ...c, rps: [], p50: [], cpuUs: [] }));
  const baseline = baselineScript();
  if (baseline) {
    const env = BASELINE_RATIO ? tracedEnv(receiver, BASELINE_RATIO) : {};
    cases.push({ name: 'before', booted: await boot('tracing-before', env, baseline), rps: [], p50: [], cpuUs: [] });
  }
  // a warm-up cell each, not kept
  for (const c of cases) await cell(c, 2);
  for (const c of cases) [c.rps, c.p50, c.cpuUs] = [[], [], []];
  const { cores, cpu } = machine();
  log(`tracing: ${ROUNDS} rounds x ${SECONDS} s per cell at c=${CONNECTIONS}, ${cores} cores (${cpu})`);
  const receivedBefore = receiver.received;
  const started = Date.now();
  for (let round = 0; round < ROUNDS; round++) {
    const order = [...cases.slice(round % cases.length), ...cases.slice(0, round % cases.length)];
    for (const c of order) await cell(c, SECONDS);
    const figures = cases.map((c) => `${c.name} ${c.rps[round].toFixed(0)} (${c.cpuUs[round].toFixed(0)} µs)`);
    log(`  round ${round + 1}: ${figures.join(', ')} req/s (gateway CPU a request)`);
  }
  // the receiver's count over the whole measuring time (mostly the 1.0 gateway's; the 0.01 one adds a hundredth of its own)
  const spansPerSecond = ((receiver.received - receivedBefore) * 1000) / (Date.now() - started);
  const table = renderTargetTable(rows(cases, spansPerSecond));
  const date = new Date().toISOString();
  process.stdout.write(`\n${table}\n(${cores} cores, ${date}; a shared machine: differences of a few % are noise)\n`);
  writeSection(
    RESULTS_FILE,
    'tracing',
    [
      '## Traces: one-step chat with tracing off, on at 1.0 and at 0.01',
      '',
      'Written by `npm run bench:tracing` (bench/tracing.ts): one-step gateways that differ only in their OTEL_* ' +
        `variables, exporting OTLP/protobuf to a local receiver, at c=${CONNECTIONS} in ${SECONDS} s cells for ${ROUNDS} ` +
        'rounds (the order turned each round); req/s is the median over the rounds, p50 the median of the cells. ' +
        `${cores} cores (${cpu}), ${date}.`,
      '',
      table,
    ].join('\n'),
  );
});
