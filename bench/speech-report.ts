import { renderTargetTable, TargetRow } from './results-file';
import type {
  EngineSpeed,
  FirstAudio,
  SpeechFigures,
  SpeechRunInfo,
  SpeechSetup,
  StreamsHeld,
  SyncCell,
} from './speech-figures';

/** The operations issue's targets for the 2-core machine, each measured in the same run as its reference. */
export const SPEECH_GOALS = {
  syncOverheadP50Ms: 2,
  wsFirstAudioOverheadP50Ms: 5,
  streams: 1000,
  streamKb: 200,
  idleRssMb: 150,
  startupMs: 2000,
};

const ms = (x: number): string => x.toFixed(2);
const find = (cells: SyncCell[], target: SyncCell['target'], c: number): SyncCell => {
  const cell = cells.find((x) => x.target === target && x.connections === c);
  if (!cell) throw new Error(`no sync measurement for ${target} at c=${c}`);
  return cell;
};

/** Each figure against its target; figures without a target are reported as information. */
export function speechChecks(f: SpeechFigures): TargetRow[] {
  const direct1 = find(f.sync, 'upstream direct', 1);
  const gateway1 = find(f.sync, 'gateway', 1);
  const syncOverhead = gateway1.result.p50 - direct1.result.p50;
  const syncOverheadP99 = gateway1.result.p99 - direct1.result.p99;
  const faults = f.sync.reduce((n, c) => n + c.result.non2xx + c.result.errors + c.result.headerMismatches, 0);
  const rows: TargetRow[] = [
    {
      figure: 'sync speech overhead over the upstream direct, p50 at c=1',
      value: `${ms(syncOverhead)} ms (${ms(gateway1.result.p50)} - ${ms(direct1.result.p50)})`,
      target: `<= ${SPEECH_GOALS.syncOverheadP50Ms} ms`,
      pass: syncOverhead <= SPEECH_GOALS.syncOverheadP50Ms,
    },
    {
      figure: 'sync speech overhead over the upstream direct, p99 at c=1',
      value: `${ms(syncOverheadP99)} ms (${ms(gateway1.result.p99)} - ${ms(direct1.result.p99)})`,
      target: '-',
      pass: null,
    },
    {
      figure: 'sync speech: every response 2xx with x-svc-provider-used',
      value: `${faults} non-2xx, socket errors or header mismatches`,
      target: '0',
      pass: faults === 0,
    },
  ];
  for (const [i, fa] of f.firstAudio.entries()) {
    const overhead = fa.gateway.p50 - fa.direct.p50;
    rows.push({
      figure: `WebSocket time to first audio over the upstream, p50 (${fa.format})`,
      value: `${ms(overhead)} ms (${ms(fa.gateway.p50)} - ${ms(fa.direct.p50)}; p99 ${ms(fa.gateway.p99)} vs ${ms(fa.direct.p99)})`,
      // the target applies to the default request (the first format measured); the others are information
      target: i === 0 ? `<= ${SPEECH_GOALS.wsFirstAudioOverheadP50Ms} ms` : '-',
      pass: i === 0 ? overhead <= SPEECH_GOALS.wsFirstAudioOverheadP50Ms : null,
    });
  }
  for (const [i, s] of f.streams.entries()) {
    const target = i === 0;
    rows.push({
      figure: `concurrent WebSocket streams held after task_start (${s.format})`,
      value: `${s.held} of ${s.attempted} (${s.working} of ${s.sampled} sampled then spoke to task_finished)`,
      target: target ? `${SPEECH_GOALS.streams}` : '-',
      pass: target ? s.held >= SPEECH_GOALS.streams && s.working === s.sampled : null,
    });
    rows.push({
      figure: `gateway RSS growth per held stream (${s.format})`,
      value: `${s.perStreamKb.toFixed(0)} KB (${s.rssBeforeMb.toFixed(0)} -> ${s.rssWithMb.toFixed(0)} MB)`,
      target: target ? `<= ${SPEECH_GOALS.streamKb} KB` : '-',
      pass: target ? s.perStreamKb <= SPEECH_GOALS.streamKb : null,
    });
  }
  for (const e of f.engine) {
    rows.push({
      figure: `offline engine real-time factor (${e.format})`,
      value: `${e.rtf.toFixed(1)}x (${e.audioSeconds.toFixed(1)} s of audio in ${e.wallSeconds.toFixed(2)} s)`,
      target: '-',
      pass: null,
    });
  }
  rows.push(
    {
      figure: 'idle RSS of a started service (default config/gateway.yaml)',
      value: `${f.startup.idleRssMb.toFixed(0)} MB (${f.startup.idleAfterSeconds} s after ready; ${f.startup.rssAtReadyMb.toFixed(0)} MB at ready)`,
      target: `<= ${SPEECH_GOALS.idleRssMb} MB`,
      pass: f.startup.idleRssMb <= SPEECH_GOALS.idleRssMb,
    },
    {
      figure: 'startup to ready on a migrated database (median)',
      value: `${f.startup.medianMs.toFixed(0)} ms (boots: ${f.startup.bootsMs.map((x) => x.toFixed(0)).join(', ')} ms)`,
      target: `<= ${SPEECH_GOALS.startupMs} ms`,
      pass: f.startup.medianMs <= SPEECH_GOALS.startupMs,
    },
  );
  return rows;
}

export function renderSyncTable(cells: SyncCell[]): string {
  const lines = [
    '| target | c | req/s | p50 ms | p99 ms | non-2xx | errors | header mismatches | responses | other processes (cores) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const { target, connections, result: r, otherCores } of cells) {
    lines.push(
      `| ${target} | ${connections} | ${r.rps.toFixed(0)} | ${ms(r.p50)} | ${ms(r.p99)} | ${r.non2xx} | ${r.errors} | ${r.headerMismatches} | ${r.responses} | ${otherCores.toFixed(2)} |`,
    );
  }
  return lines.join('\n');
}

export function renderFirstAudioTable(list: FirstAudio[]): string {
  const lines = [
    '| audio_setting | samples each | upstream direct p50 / p99 ms | gateway p50 / p99 ms | overhead p50 ms | other processes (cores) |',
    '|---|---:|---|---|---:|---:|',
  ];
  for (const fa of list) {
    lines.push(
      `| ${fa.format} | ${fa.samples} | ${ms(fa.direct.p50)} / ${ms(fa.direct.p99)} | ${ms(fa.gateway.p50)} / ${ms(fa.gateway.p99)} | ${ms(fa.gateway.p50 - fa.direct.p50)} | ${fa.otherCores.toFixed(2)} |`,
    );
  }
  return lines.join('\n');
}

export function renderStreamsTable(list: StreamsHeld[]): string {
  const lines = [
    '| task_start audio_setting | attempted | opened | held after the hold | sampled streams that then spoke | seconds to open all | RSS before MB | RSS with streams MB | peak RSS MB | per stream KB | other processes (cores) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const s of list) {
    lines.push(
      `| ${s.format} | ${s.attempted} | ${s.opened} | ${s.held} | ${s.working} / ${s.sampled} | ${s.openSeconds.toFixed(1)} | ${s.rssBeforeMb.toFixed(0)} | ${s.rssWithMb.toFixed(0)} | ${s.peakRssMb.toFixed(0)} | ${s.perStreamKb.toFixed(0)} | ${s.otherCores.toFixed(2)} |`,
    );
  }
  const errors = list.flatMap((s) => s.errors.slice(0, 3).map((e) => `- ${s.format}: ${e}`));
  return errors.length > 0 ? `${lines.join('\n')}\n\nFirst errors:\n\n${errors.join('\n')}` : lines.join('\n');
}

export function renderEngineTable(list: EngineSpeed[]): string {
  const lines = [
    '| format | bytes | audio s | wall s (median) | real-time factor | audio length from | other processes (cores) |',
    '|---|---:|---:|---:|---:|---|---:|',
  ];
  for (const e of list)
    lines.push(
      `| ${e.format} | ${e.bytes} | ${e.audioSeconds.toFixed(2)} | ${e.wallSeconds.toFixed(3)} | ${e.rtf.toFixed(1)}x | ${e.lengthFrom} | ${e.otherCores.toFixed(2)} |`,
    );
  return lines.join('\n');
}

export const renderSpeechChecks = (rows: TargetRow[]): string =>
  rows
    .map(
      (r) =>
        `${r.pass === null ? 'INFO' : r.pass ? 'PASS' : 'MISS'}  ${r.figure}: ${r.value}${r.target === '-' ? '' : ` (target ${r.target})`}`,
    )
    .join('\n');

export function renderSpeechResults(
  info: SpeechRunInfo,
  setup: SpeechSetup,
  f: SpeechFigures,
  rows: TargetRow[],
): string {
  const others = [
    ...f.sync.map((c) => c.otherCores),
    ...f.firstAudio.map((x) => x.otherCores),
    ...f.streams.map((x) => x.otherCores),
    ...f.engine.map((x) => x.otherCores),
  ];
  return `## Speech benchmark

Written by \`npm run bench:speech\` (bench/speech.ts).

- Date: ${info.date}
- Cores (\`nproc\`): ${info.cores} (${info.cpu})
- Node: ${info.node}
- Machine load: shared with other work during the run; processes outside the benchmark used ${Math.min(...others).toFixed(2)} to ${Math.max(...others).toFixed(2)} cores
  while the figures were taken (last column of each table); 1-minute load average ${info.loadAverage[0].toFixed(1)} at the start, ${info.loadAverage[1].toFixed(1)} at the end.
  Absolute figures move with that load; each target compares figures of the same run
- Upstream: the e2e tests' fake MiniMax T2A v2 (test/fakes/fake-minimax.ts) in its own process, hex audio in SSE, its tone encoded once per shape
- Gateway: \`node dist/src/main.js\`, \`LOG_LEVEL=info\` (JSON logs written to a file), a fresh PostgreSQL database, chain \`[minimax step]\`;
  load generator, upstream and gateway are separate processes on the same cores
- Sync speech: ${info.warmupSeconds} s warm-up, then ${info.seconds} s measured per cell, autocannon, keep-alive, no pipelining; request
  \`POST /v1/audio/speech\` \`${setup.syncBody}\` (mp3, 32 kHz mono by default); *upstream direct* is the exact T2A request the gateway
  sent for it (captured at the fake); latency is the whole response, percentiles nearest rank over every response
- WebSocket first audio: per sample a new session (connect, \`task_start\`, \`task_started\`), then the time from sending
  \`task_continue\` \`"${setup.wsText}"\` to the first \`task_continued\`; *upstream direct* is the time from sending the exact T2A request the
  gateway made for it to the first whole SSE event with audio (keep-alive undici pool); samples alternate between the two
- Streams: one gateway process per row, ${setup.streamKeys} keys (the default per-key stream limit stays in force), each stream connects
  and gets \`task_started\`; RSS (VmRSS) before and after, 3 s after the last one opened; the streams are then held 5 s and a sample speaks a sentence
- Offline engine: chain \`[espeak]\`, ${setup.engineChars} characters of English per request, 32 kHz mono (mp3 at 128 kbit/s), one warm-up then the
  median of 3 timed requests; real-time factor = audio seconds / wall seconds of the whole request
- Startup: \`node dist/src/main.js\` with the default config/gateway.yaml on a database an earlier boot migrated, to the first 200 of
  \`${f.startup.probe}\` (polled every 10 ms); idle RSS of the last boot, no request made

### Targets

${renderTargetTable(rows)}

### Sync speech: gateway vs the upstream direct

${renderSyncTable(f.sync)}

### WebSocket time to first audio

${renderFirstAudioTable(f.firstAudio)}

### Concurrent WebSocket streams

${renderStreamsTable(f.streams)}

### Offline engine (espeak) real-time factor

${renderEngineTable(f.engine)}

### Startup and idle memory

| measured boots | startup to ready ms | median ms | RSS at ready MB | idle RSS MB (${f.startup.idleAfterSeconds} s after ready) |
|---:|---|---:|---:|---:|
| ${f.startup.bootsMs.length} | ${f.startup.bootsMs.map((x) => x.toFixed(0)).join(', ')} | ${f.startup.medianMs.toFixed(0)} | ${f.startup.rssAtReadyMb.toFixed(0)} | ${f.startup.idleRssMb.toFixed(0)} |
`;
}
