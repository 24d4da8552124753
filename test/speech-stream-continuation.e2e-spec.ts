import { parseGatewayConfig } from '../src/config/gateway-config';
import { startFakeMiniMax, type FakeMiniMax } from './fakes/fake-minimax';
import { startApp, type TestApp } from './support/app';
import { storedEvents } from './support/failover';
import { StreamClient } from './support/ws-client';

const START = {
  event: 'task_start',
  model: 'speech-02-hd',
  voice_setting: { voice_id: 'narrator' },
  audio_setting: { format: 'pcm', sample_rate: 16000, channel: 1 },
};
const TEXTS = [
  'The first text is spoken whole.',
  'The second text breaks here. Its later sentence is spoken too.',
  'The third text comes after the break.',
];

/** The text each T2A request the fake received asked it to speak, in order. */
const spokenBy = (fake: FakeMiniMax): string[] =>
  fake.requests.filter((r) => r.path === '/v1/t2a_v2').map((r) => (r.body as { text: string }).text);

/**
 * Speech that does not break (decisions §7) on the WebSocket: a provider that fails after its audio began hands the
 * rest of the text, from the sentence that was being spoken, to the next step; the session goes on there.
 */
describe('speech WebSocket: a break after the first audio is continued on the next step', () => {
  let t: TestApp;
  const fakes: FakeMiniMax[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 4; i++) fakes.push(await startFakeMiniMax({ name: `cont-${i}` }));
    const providers = fakes
      .map((fake) => `  - { name: ${fake.name}, kind: minimax, base_url: "${fake.url}", api_key: k }\n`)
      .join('');
    t = await startApp({ gateway: parseGatewayConfig(`providers:\n${providers}`, 'continuation test') });
  });
  afterAll(async () => {
    await t?.close();
    for (const fake of fakes) await fake.close();
  });

  it.each([
    ['/v1/audio/speech/stream', 0],
    ['/ws/v1/t2a_v2', 2],
  ])('on %s: every text is spoken, the rest by the fallback, and the task finishes', async (path, first) => {
    const [entry, fallback] = [fakes[first], fakes[first + 1]];
    const key = await t.createKey(`cont ${path}`, [
      { provider: entry.name, model: 'speech-02-hd', voice_map: { '*': 'male-qn-qingse' } },
      { provider: fallback.name, model: 'speech-02-hd', voice_map: { '*': 'female-shaonv' } },
    ]);
    const client = await StreamClient.connect(`${t.url.replace('http', 'ws')}${path}`, {
      Authorization: `Bearer ${key.secret}`,
    });
    client.send(START);
    await client.waitFor((m) => m.event === 'task_started');
    const finals = (): number => client.messages.filter((m) => m.event === 'task_continued' && m.is_final).length;

    client.send({ event: 'task_continue', text: TEXTS[0] });
    await client.waitFor(() => finals() === 1);
    // the entry step sends one audio event of the second text, then fails
    entry.setMode('midStreamBaseRespError');
    const beforeBreak = client.messages.length;
    client.send({ event: 'task_continue', text: TEXTS[1] });
    await client.waitFor(() => finals() === 2);
    client.send({ event: 'task_continue', text: TEXTS[2] });
    await client.waitFor(() => finals() === 3);
    client.send({ event: 'task_finish' });
    await client.waitFor((m) => m.event === 'task_finished');
    expect(await client.closed).toBe(1000);
    entry.setMode('ok');

    expect(client.messages.some((m) => m.event === 'task_failed')).toBe(false);
    const audio = client.messages.filter((m) => m.event === 'task_continued');
    // the entry step's audio: the first text, and the second's first event before it broke
    const afterBreak = client.messages.slice(beforeBreak).filter((m) => m.event === 'task_continued');
    expect(afterBreak[0]).toMatchObject({ provider: entry.name, fallback_level: 0 });
    const continued = afterBreak.slice(1);
    expect(continued.length).toBeGreaterThan(0);
    for (const m of continued) expect(m).toMatchObject({ provider: fallback.name, fallback_level: 1 });
    // one is_final per text, each with MiniMax's extra_info
    expect(audio.filter((m) => m.is_final)).toHaveLength(3);
    for (const m of audio.filter((m) => m.is_final)) expect(m.extra_info).toMatchObject({ audio_format: 'pcm' });

    // the fallback got the broken text from its sentence on, and the text after it, never the first text
    expect(spokenBy(entry)).toEqual([TEXTS[0], TEXTS[1]]);
    expect(spokenBy(fallback)).toEqual([TEXTS[1], TEXTS[2]]);
    const voices = fallback.requests.map((r) => (r.body as { voice_setting: { voice_id: string } }).voice_setting);
    for (const voice of voices) expect(voice.voice_id).toBe('female-shaonv');

    // the failover is announced, and says it happened mid-stream
    const requestId = `${String(audio[0].trace_id)}_2`;
    const [event] = await storedEvents(t, "type = 'failover' AND data->>'request_id' = $1", [requestId], 'event');
    expect(event.data).toMatchObject({
      mid_stream: true,
      exhausted_provider: entry.name,
      active_provider: fallback.name,
    });
  });

  it('a pinned step that fails before a later text begins passes that text to the next step', async () => {
    const [entry, fallback] = [fakes[0], fakes[1]];
    const key = await t.createKey('cont pinned', [
      { provider: entry.name, model: 'speech-02-hd', voice_map: { '*': 'male-qn-qingse' } },
      { provider: fallback.name, model: 'speech-02-hd', voice_map: { '*': 'female-shaonv' } },
    ]);
    const client = await StreamClient.connect(`${t.url.replace('http', 'ws')}/v1/audio/speech/stream`, {
      Authorization: `Bearer ${key.secret}`,
    });
    client.send(START);
    await client.waitFor((m) => m.event === 'task_started');
    client.send({ event: 'task_continue', text: TEXTS[0] });
    await client.waitFor((m) => m.event === 'task_continued' && m.is_final === true);
    entry.setMode('http500');
    client.send({ event: 'task_continue', text: TEXTS[2] });
    const last = await client.waitFor(
      (m) => m.event === 'task_continued' && m.is_final === true && m.provider !== entry.name,
    );
    entry.setMode('ok');
    expect(last).toMatchObject({ provider: fallback.name, fallback_level: 1 });
    client.send({ event: 'task_finish' });
    await client.waitFor((m) => m.event === 'task_finished');
    expect(await client.closed).toBe(1000);
  });
});

/** Sync speech sent as it is made, in a format a second step's audio can follow (decisions §7). */
describe('sync speech: a break after the first audio is continued on the next step', () => {
  let t: TestApp;
  const fakes: FakeMiniMax[] = [];
  const TEXT = 'A sync answer that breaks after its first audio. It still comes out whole.';
  // pcm at 16 kHz mono: two bytes a sample
  const secondsOf = (bytes: number): number => bytes / 32000;

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) fakes.push(await startFakeMiniMax({ name: `sync-cont-${i}` }));
    const providers = fakes
      .map((fake) => `  - { name: ${fake.name}, kind: minimax, base_url: "${fake.url}", api_key: k }\n`)
      .join('');
    t = await startApp({ gateway: parseGatewayConfig(`providers:\n${providers}`, 'sync continuation test') });
  });
  afterAll(async () => {
    await t?.close();
    for (const fake of fakes) await fake.close();
  });

  const keyFor = (entry: FakeMiniMax, fallback?: FakeMiniMax) =>
    t.createKey(`sync ${entry.name} ${fallback?.name ?? 'alone'}`, [
      { provider: entry.name, model: 'speech-02-hd', voice_map: { '*': 'male-qn-qingse' } },
      ...(fallback ? [{ provider: fallback.name, model: 'speech-02-hd', voice_map: { '*': 'female-shaonv' } }] : []),
    ]);
  const minimaxBody = { model: 'speech-02-hd', text: TEXT, voice_setting: { voice_id: 'narrator' } };
  const pcm = { audio_setting: { format: 'pcm', sample_rate: 16000, channel: 1 } };

  it('POST /v1/audio/speech: 200 and the whole audio, the rest from the fallback', async () => {
    const [entry, fallback] = [fakes[0], fakes[1]];
    const clean = await t.http
      .post('/v1/audio/speech')
      .set('Authorization', `Bearer ${(await keyFor(fallback)).secret}`)
      .send({ ...minimaxBody, ...pcm })
      .buffer(true);
    expect(clean.status).toBe(200);
    const cleanSeconds = secondsOf((clean.body as Buffer).length);

    entry.setMode('midStreamBaseRespError');
    fallback.reset();
    const key = await keyFor(entry, fallback);
    const answer = await t.http
      .post('/v1/audio/speech')
      .set('Authorization', `Bearer ${key.secret}`)
      .send({ ...minimaxBody, ...pcm })
      .buffer(true);
    entry.setMode('ok');
    expect(answer.status).toBe(200);
    expect(answer.headers['x-svc-provider-used']).toBe(entry.name);
    const seconds = secondsOf((answer.body as Buffer).length);
    expect(Math.abs(seconds - cleanSeconds) / cleanSeconds).toBeLessThanOrEqual(0.25);
    // the fallback spoke the text from the sentence that was being spoken, with its own voice
    const [request] = fallback.requests.filter((r) => r.path === '/v1/t2a_v2');
    expect(request.body).toMatchObject({ text: TEXT, voice_setting: { voice_id: 'female-shaonv' } });
  });

  it("OpenAI's speech SSE: every delta, speech.audio.done and no error event", async () => {
    const [entry, fallback] = [fakes[1], fakes[2]];
    entry.setMode('midStreamBaseRespError');
    const key = await keyFor(entry, fallback);
    const answer = await t.http
      .post('/v1/audio/speech')
      .set('Authorization', `Bearer ${key.secret}`)
      .send({ model: 'speech-02-hd', input: TEXT, voice: 'alloy', response_format: 'pcm', stream_format: 'sse' })
      .buffer(true)
      .parse((res, done) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        res.on('end', () => done(null, text));
      });
    entry.setMode('ok');
    expect(answer.status).toBe(200);
    const events = (answer.body as string)
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: '))
      .map((frame) => JSON.parse(frame.slice(6)) as { type?: string; error?: unknown; audio?: string });
    expect(events.some((e) => e.error !== undefined)).toBe(false);
    expect(events[events.length - 1].type).toBe('speech.audio.done');
    const bytes = events
      .filter((e) => e.type === 'speech.audio.delta')
      .reduce((sum, e) => sum + Buffer.from(e.audio ?? '', 'base64').length, 0);
    // OpenAI's shape: 24 kHz mono pcm; more than the one event the entry sent before it broke
    expect(bytes / 48000).toBeGreaterThan(0.8 * 3);
  });

  it('with no later step the answer still ends as a broken one', async () => {
    const entry = fakes[2];
    entry.setMode('midStreamBaseRespError');
    const key = await keyFor(entry);
    const answer = await t.http
      .post('/v1/audio/speech')
      .set('Authorization', `Bearer ${key.secret}`)
      .send({ ...minimaxBody, ...pcm })
      .buffer(true)
      .then(
        () => 'complete',
        () => 'cut',
      );
    entry.setMode('ok');
    expect(answer).toBe('cut');
  });
});
