import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { FakeRunaway, HUGE_JSON_BYTES, RUNAWAY_LIMIT, startFakeRunaway } from './fakes/fake-runaway';
import { startApp, TestApp } from './support/app';
import { CHAT_PATH, chatBody, contentOf, streamChat } from './support/failover';
import { SPEECH_PATH } from './support/speech';
import { StreamClient } from './support/ws-client';

jest.setTimeout(120000);

/** The idle bound the runaway providers get in the YAML (the default is 60 s). */
const IDLE_MS = 1000;
/** Each bound is met well within this on a busy shared machine. */
const BOUND_MS = 10000;
/** What the gateway may keep of a runaway answer: the 16 MiB cap read as bytes and as text, with room for the run's noise. */
const PEAK_GROWTH_BYTES = 96 * 1024 * 1024;
const SETTLED_GROWTH_BYTES = 24 * 1024 * 1024;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap plus buffers: where an unbounded read would land. */
const used = (): number => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

/** Runs `work` while sampling memory; resolves with its result and the peak growth over the start. */
async function peakDuring<T>(work: () => Promise<T>): Promise<{ value: T; growth: number; rssGrowth: number }> {
  gc();
  const base = used();
  const baseRss = process.memoryUsage.rss();
  let peak = base;
  let peakRss = baseRss;
  const timer = setInterval(() => {
    peak = Math.max(peak, used());
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
  }, 5);
  try {
    const value = await work();
    return { value, growth: peak - base, rssGrowth: peakRss - baseRss };
  } finally {
    clearInterval(timer);
  }
}

/**
 * Upstream resource bounds (issue 15 part 5): a 50 MB JSON reply, an SSE line that never ends and a stream
 * that goes silent after its first chunk each end cleanly within their bound, and memory comes back.
 * Provider names are unique to this file (one circuit per way of failing).
 */
describe('upstream resource bounds', () => {
  let runaway: FakeRunaway;
  let fallback: FakeOpenAi;
  let t: TestApp;
  let baseline: number;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    [runaway, fallback] = await Promise.all([startFakeRunaway(), startFakeOpenAi({ name: 'ub-fallback' })]);
    runaway.setMode('hugeJson', { model: 'huge-json' });
    runaway.setMode('endlessLine', { model: 'endless-line' });
    runaway.setMode('endlessFirstLine', { model: 'endless-first-line' });
    runaway.setMode('stallAfterFirst', { model: 'stall' });
    const provider = (name: string): string =>
      `  - { name: ${name}, kind: openai, base_url: "${runaway.url}", api_key: k, stream_idle_timeout_ms: ${IDLE_MS} }`;
    const gateway = parseGatewayConfig(
      [
        'providers:',
        ...['ub-json', 'ub-json-2', 'ub-line', 'ub-first-line', 'ub-stall', 'ub-speech', 'ub-speech-ws'].map(provider),
        `  - { name: ub-fallback, kind: openai, base_url: "${fallback.url}", api_key: k }`,
      ].join('\n'),
      'upstream bounds test',
    );
    t = await startApp({ gateway });
    const key = async (label: string, steps: Array<[string, string]>): Promise<void> => {
      keys[label] = (
        await t.createKey(
          label,
          steps.map(([provider, model]) => ({ provider, model, voice_map: { '*': 'alloy' } })),
        )
      ).secret;
    };
    await key('json', [['ub-json', 'huge-json']]);
    await key('jsonFallback', [
      ['ub-json-2', 'huge-json'],
      ['ub-fallback', 'm-b'],
    ]);
    await key('line', [['ub-line', 'endless-line']]);
    await key('firstLine', [
      ['ub-first-line', 'endless-first-line'],
      ['ub-fallback', 'm-b'],
    ]);
    await key('stall', [['ub-stall', 'stall']]);
    await key('speech', [['ub-speech', 'tts-stall']]);
    await key('speechStream', [['ub-speech-ws', 'tts-stall']]);
    gc();
    baseline = used();
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([runaway?.close(), fallback?.close()]);
  });

  const chat = (secret: string, model: string): Promise<Response> =>
    fetch(`${t.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(chatBody(model)),
      signal: AbortSignal.timeout(BOUND_MS),
    });

  it('a 50 MB JSON reply is refused at the cap as 502 upstream_error, without holding it in memory', async () => {
    runaway.bytesSent = 0;
    const started = Date.now();
    const {
      value: res,
      growth,
      rssGrowth,
    } = await peakDuring(async () => {
      const answer = await chat(keys.json, 'huge-json');
      return { status: answer.status, body: (await answer.json()) as { error: Record<string, unknown> } };
    });
    expect(Date.now() - started).toBeLessThan(BOUND_MS);
    expect(res.status).toBe(502);
    expect(res.body.error).toMatchObject({ type: 'upstream_error', code: 'all_providers_failed' });
    expect(res.body.error.message).toContain('response_too_large');
    expect(runaway.bytesSent).toBeLessThan(HUGE_JSON_BYTES);
    expect(growth).toBeLessThan(PEAK_GROWTH_BYTES);
    process.stdout.write(
      `50 MB JSON: peak heap+buffers +${(growth / 2 ** 20).toFixed(1)} MiB, RSS +${(rssGrowth / 2 ** 20).toFixed(1)} MiB\n`,
    );
  });

  it('the oversized reply is a provider failure: the next step serves the request', async () => {
    const res = await chat(keys.jsonFallback, 'huge-json');
    expect(res.status).toBe(200);
    expect(res.headers.get('x-svc-provider-used')).toBe('ub-fallback');
    expect(((await res.json()) as { provider: string }).provider).toBe('ub-fallback');
  });

  it('an SSE line that never ends, after the first chunk, ends the stream with an error event and no [DONE]', async () => {
    runaway.bytesSent = 0;
    const { value: streamed, growth } = await peakDuring(() => streamChat(t, keys.line, chatBody('endless-line')));
    expect(streamed.totalMs).toBeLessThan(BOUND_MS);
    expect(streamed.status).toBe(200);
    expect(contentOf(streamed.events)).toBe('Hello');
    const last = streamed.events[streamed.events.length - 1];
    expect(last).toMatchObject({
      error: {
        type: 'upstream_error',
        code: 'upstream_stream_failed',
        message: expect.stringContaining('response_too_large'),
      },
    });
    expect(streamed.events).not.toContain('[DONE]');
    expect(runaway.bytesSent).toBeLessThan(RUNAWAY_LIMIT);
    expect(growth).toBeLessThan(PEAK_GROWTH_BYTES);
  });

  it('an SSE line that never ends before the first chunk fails over to the next step', async () => {
    const streamed = await streamChat(t, keys.firstLine, chatBody('endless-first-line'));
    expect(streamed.totalMs).toBeLessThan(BOUND_MS);
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get('x-svc-provider-used')).toBe('ub-fallback');
    expect(streamed.events[streamed.events.length - 1]).toBe('[DONE]');
  });

  it('a stream silent after its first chunk ends with an error event once the idle timeout passes', async () => {
    const streamed = await streamChat(t, keys.stall, chatBody('stall'));
    expect(streamed.status).toBe(200);
    expect(contentOf(streamed.events)).toBe('Hello');
    expect(streamed.events[streamed.events.length - 1]).toMatchObject({
      error: { code: 'upstream_stream_failed', message: expect.stringContaining('STREAM_IDLE') },
    });
    expect(streamed.events).not.toContain('[DONE]');
    expect(streamed.totalMs).toBeGreaterThanOrEqual(IDLE_MS - 100);
    expect(streamed.totalMs).toBeLessThan(IDLE_MS + BOUND_MS);
    await runaway.waitUntil(() => runaway.openConnections === 0, BOUND_MS);
  });

  it('upstream audio silent after its first chunk: the speech answer is cut, not left open', async () => {
    const started = Date.now();
    const res = await fetch(`${t.url}${SPEECH_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.speech}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'tts-stall',
        text: 'Silence follows this.',
        voice_setting: { voice_id: 'narrator' },
        audio_setting: { format: 'pcm', sample_rate: 24000 },
      }),
      signal: AbortSignal.timeout(IDLE_MS + BOUND_MS),
    });
    expect(res.status).toBe(200);
    const read = await res.arrayBuffer().then(
      () => 'complete',
      (err: Error) => (err.name === 'TimeoutError' ? 'still open' : 'cut'),
    );
    expect(read).toBe('cut');
    expect(Date.now() - started).toBeGreaterThanOrEqual(IDLE_MS - 100);
  });

  it('upstream audio silent after its first chunk on a speech WebSocket: task_failed once the idle timeout passes', async () => {
    const stream = await StreamClient.connect(`${t.url.replace('http', 'ws')}/v1/audio/speech/stream`, {
      Authorization: `Bearer ${keys.speechStream}`,
    });
    stream.send({
      event: 'task_start',
      model: 'tts-stall',
      voice_setting: { voice_id: 'narrator' },
      audio_setting: { format: 'pcm', sample_rate: 24000 },
    });
    await stream.waitFor((m) => m.event === 'task_started', BOUND_MS);
    const started = Date.now();
    stream.send({ event: 'task_continue', text: 'Silence follows this sentence. ' });
    stream.send({ event: 'task_finish' });
    await stream.waitFor((m) => m.event === 'task_failed', IDLE_MS + BOUND_MS);
    expect(Date.now() - started).toBeGreaterThanOrEqual(IDLE_MS - 100);
    expect(await stream.closed).toBe(1011);
  });

  it('memory returns near its baseline afterwards', async () => {
    await new Promise((resolve) => setTimeout(resolve, 200));
    gc();
    const growth = used() - baseline;
    process.stdout.write(
      `after the runaway answers: heap+buffers ${growth >= 0 ? '+' : ''}${(growth / 2 ** 20).toFixed(1)} MiB over the baseline\n`,
    );
    expect(growth).toBeLessThan(SETTLED_GROWTH_BYTES);
  });
});
