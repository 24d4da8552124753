import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { projectRoot } from '../src/common/paths';
import { startFakeMiniMax } from '../test/fakes/fake-minimax';
import { accountRows, accountsProvider, AccountsUpstream, HOLD_MS } from './account-figures';
import { percentile } from './load';
import { createBenchKey, gatewayEnv, startGateway } from './processes';
import { reportTargets, type TargetRow } from './results-file';
import { log, machine, runBenchmark, secondsFromEnv } from './run';
import { StreamSession } from './ws-session';

/**
 * `npm run bench:speech-continuation` (decisions §7): the time from a provider break to the first continued audio,
 * beside the fallback's own time to first audio on a clean request taken the same way, on the MiniMax WebSocket and
 * on OpenAI's speech SSE, at c=1 and with CONCURRENT streams at once; then the accounts figures (account-figures.ts).
 * The entry step (a fake MiniMax) sends one audio event of every answer, then a base_resp error; the fallback
 * speaks the text again from the sentence that was being spoken.
 */

const ROOT = projectRoot();
const RESULTS_FILE = join(ROOT, 'bench/results.md');
const count = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const SAMPLES = count('BENCH_SPEECH_CONT_SAMPLES', 20);
const CONCURRENT = count('BENCH_SPEECH_CONT_CONCURRENCY', 50);
const ROUNDS = count('BENCH_SPEECH_CONT_ROUNDS', 2);
/** The concurrent streams are spread over this many keys, as many clients' are. */
const SPEECH_KEYS = 10;
const BURST = count('BENCH_ACCOUNTS_BURST', 10);
const BURSTS = count('BENCH_ACCOUNTS_BURSTS', 3);
const ACCOUNT_SECONDS = secondsFromEnv('BENCH_ACCOUNTS_SECONDS', 10);
/** Each answer's own text (the break times are found by it): two sentences, the break in the first. */
let serial = 0;
const nextText = (): string => `This text breaks here, take ${++serial}. Its later sentence is spoken too.`;
const START = {
  event: 'task_start',
  model: 'speech-02-hd',
  voice_setting: { voice_id: 'narrator' },
  audio_setting: { format: 'pcm', sample_rate: 16000, channel: 1 },
};
const sseBody = (input: string): string =>
  JSON.stringify({ model: 'speech-02-hd', input, voice: 'alloy', response_format: 'pcm', stream_format: 'sse' });
/** When the entry step wrote its error event and ended its answer, by the text it was asked to speak. */
const breaks = new Map<string, number>();

type Path = 'ws' | 'sse';
/** `broken`: the entry's break → first continued audio; `clean`: request → first audio. NaN when not seen. */
type Measure = (url: string, secret: string, broken: boolean) => Promise<number>;

/** Polls (the messages carry their arrival time) until `done` holds, bounded. */
async function settled(session: StreamSession, done: () => boolean, timeoutMs = 30000): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!done() && session.closeCode === null && performance.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 5));
  return done();
}

/**
 * One WebSocket turn: clean, the time from task_continue to its first audio; broken, from the entry's break to the
 * first audio naming the fallback. The session then finishes as a client's does. (The gateway holds each chunk
 * back until the next one comes, so the last one can carry is_final: the entry's audio reaches the client only once
 * the fallback's first chunk is in, which is why the break is timed at the fake, on the same clock.)
 */
const wsTurn: Measure = async (url, secret, broken) => {
  const session = await StreamSession.open(`${url.replace('http', 'ws')}/ws/v1/t2a_v2`, {
    authorization: `Bearer ${secret}`,
  });
  try {
    session.send(START);
    await session.until('task_started');
    const text = nextText();
    const sent = performance.now();
    session.send({ event: 'task_continue', text });
    const audio = () => session.messages.filter((m) => m.event === 'task_continued');
    if (!(await settled(session, () => audio().some((m) => m.is_final === true)))) return NaN;
    session.send({ event: 'task_finish' });
    await session.until('task_finished');
    const [first] = audio();
    if (!broken) return first.at - sent;
    const continued = audio().find((m) => m.fallback_level === 1);
    const brokeAt = breaks.get(text);
    return first.fallback_level === 0 && continued && brokeAt !== undefined ? continued.at - brokeAt : NaN;
  } finally {
    await session.close();
  }
};

/** One OpenAI speech SSE answer: clean, request → first delta; broken, the entry's break → the second delta. */
const sseAnswer: Measure = async (url, secret, broken) => {
  const text = nextText();
  const sent = performance.now();
  const res = await fetch(`${url}/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: sseBody(text),
  });
  if (res.status !== 200) return NaN;
  const decoder = new TextDecoder();
  let buffered = '';
  const deltas: number[] = [];
  let done = false;
  let errored = false;
  for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
    const now = performance.now();
    buffered += decoder.decode(bytes, { stream: true });
    const frames = buffered.split('\n\n');
    buffered = frames.pop() ?? '';
    for (const frame of frames) {
      if (!frame.startsWith('data: ')) continue;
      const event = JSON.parse(frame.slice(6)) as { type?: string; error?: unknown };
      if (event.error !== undefined) errored = true;
      if (event.type === 'speech.audio.delta') deltas.push(now);
      if (event.type === 'speech.audio.done') done = true;
    }
  }
  if (!done || errored || deltas.length < 2) return NaN;
  const brokeAt = breaks.get(text);
  if (broken) return brokeAt === undefined ? NaN : deltas[1] - brokeAt;
  return deltas[0] - sent;
};

const MEASURES: Record<Path, Measure> = { ws: wsTurn, sse: sseAnswer };

/**
 * `samples` one after another at c=1, or `rounds` of `concurrent` at once (spread over the keys, so each key's
 * shipped stream limit holds): the times seen, and how many were not.
 */
async function sample(
  measure: Measure,
  url: string,
  secrets: string[],
  broken: boolean,
  concurrent: number,
): Promise<{ times: number[]; missing: number }> {
  const times: number[] = [];
  let missing = 0;
  const keep = (ms: number): void => void (Number.isNaN(ms) ? (missing += 1) : times.push(ms));
  const [secret] = secrets;
  await measure(url, secret, broken); // warm-up, not kept
  if (concurrent === 1) for (let i = 0; i < SAMPLES; i++) keep(await measure(url, secret, broken));
  else
    for (let r = 0; r < ROUNDS; r++)
      for (const ms of await Promise.all(
        Array.from({ length: concurrent }, (_, i) => measure(url, secrets[i % secrets.length], broken)),
      ))
        keep(ms);
  return { times, missing };
}

const p50 = (values: number[]): number => percentile(Float64Array.from(values).sort(), 50);

runBenchmark('speech-continuation', async (run) => {
  const [entry, fallback] = await Promise.all(['entry', 'fallback'].map((name) => startFakeMiniMax({ name })));
  entry.setMode('midStreamBaseRespError');
  entry.httpServer.on('request', (req, res) =>
    res.once('finish', () => {
      const at = performance.now();
      const record = entry.requests.find((r) => r.headers === req.headers);
      const text = (record?.body as { text?: string } | undefined)?.text;
      if (text !== undefined) breaks.set(text, at);
    }),
  );
  const slow = new AccountsUpstream(HOLD_MS);
  const fast = new AccountsUpstream(0);
  const [slowUrl, fastUrl] = [await slow.listen(), await fast.listen()];
  const spare = new AccountsUpstream(0);
  const spareUrl = await spare.listen();
  run.track({
    stop: () =>
      Promise.all([entry.close(), fallback.close(), slow.fake.close(), fast.fake.close(), spare.fake.close()]).then(
        () => undefined,
      ),
  });
  const config = join(run.tmp, 'speech-continuation.yaml');
  const minimax = (name: string, url: string): string =>
    `  - { name: ${name}, kind: minimax, base_url: "${url}", api_key: k }`;
  writeFileSync(
    config,
    ['providers:', minimax('entry', entry.url), minimax('fallback', fallback.url)]
      .concat(accountsProvider('burst', slowUrl, true, 50), accountsProvider('pooled', fastUrl, true, 50))
      .concat(accountsProvider('plain', fastUrl, false, 50), accountsProvider('spare', spareUrl, false, 50))
      .join('\n'),
  );
  const database = await run.createDatabase('speech_continuation');
  const gateway = run.track(
    await startGateway({
      script: join(ROOT, 'dist/src/main.js'),
      logFile: join(run.tmp, 'speech-continuation.log'),
      // every answer breaks on the entry step: its circuit must stay closed for the measurement
      env: gatewayEnv(database.url, config, { SVC_BREAKER_THRESHOLD: '1000000000', LOG_LEVEL: 'warn' }),
    }),
  );
  const step = (provider: string, model: string, voice?: string) => ({
    provider,
    model,
    ...(voice ? { voice_map: { '*': voice } } : {}),
  });
  const keys = (name: string, chain: ReturnType<typeof step>[]): Promise<string[]> =>
    Promise.all(Array.from({ length: SPEECH_KEYS }, (_, i) => createBenchKey(gateway.url, `${name} ${i}`, chain)));
  const speechKeys = {
    broken: await keys('speech broken', [
      step('entry', 'speech-02-hd', 'male-qn-qingse'),
      step('fallback', 'speech-02-hd', 'female-shaonv'),
    ]),
    clean: await keys('speech clean', [step('fallback', 'speech-02-hd', 'female-shaonv')]),
  };
  const rows: TargetRow[] = [];
  log(`speech-continuation: ${SAMPLES} at c=1, ${ROUNDS} rounds of ${CONCURRENT} at once, per path`);
  for (const path of ['ws', 'sse'] as const)
    for (const concurrent of [1, CONCURRENT]) {
      const clean = await sample(MEASURES[path], gateway.url, speechKeys.clean, false, concurrent);
      const broken = await sample(MEASURES[path], gateway.url, speechKeys.broken, true, concurrent);
      const [gap, own] = [p50(broken.times), p50(clean.times)];
      const bound = 1.5 * own + 50;
      const label = path === 'ws' ? 'WebSocket /ws/v1/t2a_v2' : 'sync SSE /v1/audio/speech';
      rows.push({
        figure: `${label}, c=${concurrent}: break → first continued audio (fallback's own first audio)`,
        value: `p50 ${gap.toFixed(1)} ms (own ${own.toFixed(1)} ms; ${broken.times.length} + ${clean.times.length} streams, ${broken.missing + clean.missing} not whole)`,
        target: `≤ 1.5 × own + 50 = ${bound.toFixed(1)} ms`,
        pass: gap <= bound && broken.missing + clean.missing === 0,
      });
      log(`  ${path} c=${concurrent}: gap ${gap.toFixed(1)} ms, own ${own.toFixed(1)} ms`);
    }
  const chatKeys = {
    burst: await createBenchKey(gateway.url, 'accounts burst', [
      step('burst', 'bench-model'),
      step('spare', 'bench-model'),
    ]),
    pooled: await createBenchKey(gateway.url, 'accounts pooled', [step('pooled', 'bench-model')]),
    plain: await createBenchKey(gateway.url, 'accounts plain', [step('plain', 'bench-model')]),
  };
  log(`accounts: ${BURSTS} bursts of ${BURST}, then ${ACCOUNT_SECONDS} s of paired requests`);
  rows.push(
    ...(await accountRows(gateway.url, chatKeys, slow, { burst: BURST, rounds: BURSTS, seconds: ACCOUNT_SECONDS })),
  );
  reportTargets(
    RESULTS_FILE,
    'speech-continuation',
    {
      title: 'Continued speech streams and accounts',
      script: 'bench/speech-continuation.ts',
      machine: machine(),
      notes: [
        `- Speech: chain \`[entry, fallback]\` (fake MiniMax, in the bench's process); the entry sends one audio event of every answer, then a base_resp error; ${SAMPLES} streams at c=1, ${ROUNDS} rounds of ${CONCURRENT} at once over ${SPEECH_KEYS} keys, after one warm-up; pcm 16 kHz on the WebSocket, OpenAI's 24 kHz pcm SSE`,
        "- Gap: from the moment the entry's fake wrote its error event and ended its answer (same process, same clock) to the client's first audio of the fallback (WebSocket: the first message with `fallback_level` 1; SSE: the second delta); own: request → first audio on a key whose chain is the fallback alone; both fakes answer at once (no first-byte delay), so the figures are the gateway's own",
        `- Accounts: an openai-kind provider with two accounts of \`max_concurrency\` 3 and \`queue_timeout_ms\` 50, an upstream answering after ${HOLD_MS} ms, ${BURSTS} bursts of ${BURST}; added latency: paired c=1 turns (bench/paired.ts, 20 a turn, 5 settling) of the same upstream behind a provider with and without accounts`,
      ],
    },
    rows,
  );
});
