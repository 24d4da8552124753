import { join } from 'node:path';
import { chosenCases, compareBuilds, reportComparison, type AbCase, type AbTarget } from './ab-rounds';
import { baselineScript, GATEWAY_SCRIPT } from './chat-modes';
import { forkHelper } from './processes';
import { runBenchmark, secondsFromEnv } from './run';
import { bootSpeechGateway, isUrl, type BootedGateway } from './speech-gateway';
import { projectRoot } from '../src/common/paths';

/**
 * `npm run bench:speech-ab`: this build against another (`BENCH_BASELINE`, as for `bench:chat-ab`) on sync speech
 * through MiniMax (the fake in its own process): the gateway asks for a stream, reads MiniMax's hex events and
 * sends the audio on. The same alternating rounds as `bench:chat-ab` (bench/ab-rounds.ts), written to
 * bench/results.md (BENCH_NO_WRITE=1: print only). Env: BENCH_AB_ROUNDS (12), BENCH_AB_SECONDS (3),
 * BENCH_AB_CASES (e.g. `mp3 c=10`; default all), BENCH_BASELINE_LABEL.
 */

const RESULTS_FILE = join(projectRoot(), 'bench/results.md');
const ROUNDS = Math.round(secondsFromEnv('BENCH_AB_ROUNDS', 12));
const SECONDS = secondsFromEnv('BENCH_AB_SECONDS', 3);
const MODEL = 'speech-02-hd';
const SPEECH_PATH = '/v1/audio/speech';

const speechBody = (audio?: Record<string, unknown>): string =>
  JSON.stringify({
    model: MODEL,
    text: 'Hello there.',
    voice_setting: { voice_id: 'male-qn-qingse' },
    ...(audio ? { audio_setting: audio } : {}),
  });

const CASES = chosenCases<AbCase>(
  [
    { name: 'mp3 c=1', path: SPEECH_PATH, body: speechBody(), connections: 1 },
    { name: 'mp3 c=10', path: SPEECH_PATH, body: speechBody(), connections: 10 },
    {
      name: 'pcm 16 kHz c=10',
      path: SPEECH_PATH,
      body: speechBody({ format: 'pcm', sample_rate: 16000, channel: 1 }),
      connections: 10,
    },
  ],
  process.env.BENCH_AB_CASES,
);

async function target(booted: BootedGateway): Promise<AbTarget> {
  const secret = await booted.createKey('bench speech a/b', [{ provider: 'minimax', model: MODEL }]);
  return { url: booted.gateway.url, secret, servedBy: 'minimax' };
}

runBenchmark('bench:speech-ab', async (run) => {
  const baseline = baselineScript();
  if (!baseline) throw new Error('set BENCH_BASELINE to the other build (a checkout root or its dist/src/main.js)');
  const upstream = run.track(await forkHelper(join(__dirname, 'speech-upstream.js'), [], isUrl));
  const thisBuild = await bootSpeechGateway(run, 'speech-ab-this', upstream.ready.url, GATEWAY_SCRIPT);
  const other = await bootSpeechGateway(run, 'speech-ab-baseline', upstream.ready.url, baseline);
  const lines = await compareBuilds(CASES, await target(thisBuild), await target(other), ROUNDS, SECONDS);
  reportComparison(
    RESULTS_FILE,
    'speech-ab',
    '## Speech A/B: this build against a baseline build',
    'Written by `npm run bench:speech-ab` (bench/speech-ab.ts): sync speech through MiniMax (the fake, streaming hex\n' +
      `events) on gateways of both builds side by side, each case measured in alternating ${SECONDS} s cells (A B, then\n` +
      `B A) for ${ROUNDS} rounds; the ratio is the median of the per-round ratios.`,
    lines,
  );
});
