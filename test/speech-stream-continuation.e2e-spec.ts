import { parseFlacStreamInfo, parseWavHeader } from '../src/audio/parse';
import { readOggPages } from '../src/audio/ogg';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { startFakeElevenLabs, type FakeElevenLabs } from './fakes/fake-elevenlabs';
import { startFakeMiniMax, type FakeMiniMax } from './fakes/fake-minimax';
import { toneSeconds } from './fakes/speech-audio';
import { decodeFlac } from './support/flac';
import { decodeOggOpus } from './support/ogg-opus';
import { startApp, type TestApp } from './support/app';
import { eventually, storedEvents } from './support/failover';
import { isolatedDatabase, Receiver, verifyDelivery } from './support/receiver';
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

/** The one usage record of a request, read through the usage API once the batched writer stored it. */
async function usageRecord(t: TestApp, secret: string, requestId: string): Promise<Record<string, unknown>> {
  const { data } = await eventually(
    async () =>
      (await t.http.get('/v1/usage').query({ request_id: requestId }).auth(secret, { type: 'bearer' })).body as {
        data?: Array<Record<string, unknown>>;
      },
    (body) => (body.data?.length ?? 0) > 0,
    5000,
    `the usage record of ${requestId}`,
  );
  expect(data).toHaveLength(1);
  return data?.[0] ?? {};
}

/**
 * The usage record of a continued request (decisions §7: it lists both attempts): the entry step served, its stream
 * broke, and the fallback served the rest.
 */
const continuedRecord = (entry: string, fallback: string): Record<string, unknown> => ({
  status: 200,
  provider: fallback,
  fallback_level: 1,
  attempts: [
    { provider: entry, level: 0, outcome: 'ok' },
    { provider: entry, level: 0, outcome: expect.stringMatching(/^stream broke: /) },
    { provider: fallback, level: 1, outcome: 'ok' },
  ],
});

/**
 * A database of this file's own: every app on a database delivers its webhooks, and another file's app on the run's
 * database (private addresses refused) could take the deliveries to this file's local receiver.
 */
let db: { url: string; drop(): Promise<void> };
beforeAll(async () => {
  db = await isolatedDatabase('speech_continuation');
});
afterAll(async () => {
  await db?.drop();
});

/**
 * Speech that does not break (decisions §7) on the WebSocket: a provider that fails after its audio began hands the
 * rest of the text, from the sentence that was being spoken, to the next step; the session goes on there.
 */
describe('speech WebSocket: a break after the first audio is continued on the next step', () => {
  let t: TestApp;
  const fakes: FakeMiniMax[] = [];
  /** The keys' webhook endpoints (decisions §8). */
  let receiver: Receiver;

  beforeAll(async () => {
    for (let i = 0; i < 4; i++) fakes.push(await startFakeMiniMax({ name: `cont-${i}` }));
    receiver = await Receiver.start();
    const providers = fakes
      .map((fake) => `  - { name: ${fake.name}, kind: minimax, base_url: "${fake.url}", api_key: k }\n`)
      .join('');
    t = await startApp({
      gateway: parseGatewayConfig(`providers:\n${providers}`, 'continuation test'),
      env: { DATABASE_URL: db.url, SVC_WEBHOOK_ALLOW_PRIVATE: 'true' },
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
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
    const hook = `/failover-${first}`;
    const endpoint = await t.http
      .post('/v1/user/webhooks')
      .set('Authorization', `Bearer ${key.secret}`)
      .send({ url: receiver.url(hook), events: ['failover'] });
    expect(endpoint.status).toBe(201);
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
    // the key's endpoint subscribed to failovers receives it, signed (decisions §8)
    const [delivery] = await receiver.waitFor(hook, 1);
    expect(delivery.headers['x-svc-event']).toBe('failover');
    expect(verifyDelivery(endpoint.body.secret as string, delivery.headers, delivery.raw)).toBe(true);
    expect(JSON.parse(delivery.raw.toString('utf8'))).toMatchObject({
      id: event.id,
      event: 'failover',
      data: {
        proxy_key: key.id,
        exhausted_provider: entry.name,
        active_provider: fallback.name,
        fallback_level: 1,
        request_id: requestId,
        mid_stream: true,
      },
    });
    // the broken text's usage record lists both providers
    expect(await usageRecord(t, key.secret, requestId)).toMatchObject(continuedRecord(entry.name, fallback.name));
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

/**
 * Seconds of a flac or opus answer as an independent decoder plays it, once it proved to be one valid stream: one
 * FLAC header and no decoder error; one Ogg logical stream (one serial, pages in sequence, BOS first, EOS last).
 */
async function playedSeconds(format: 'flac' | 'opus', bytes: Buffer): Promise<number> {
  if (format === 'flac') {
    const info = parseFlacStreamInfo(bytes);
    expect(info).toMatchObject({ sampleRate: 16000, channels: 1, bitsPerSample: 16 });
    expect(bytes.indexOf('fLaC', 4)).toBe(-1);
    const { samples, errors } = await decodeFlac(bytes, 1);
    expect(errors).toEqual([]);
    return samples.length / 16000;
  }
  const pages = readOggPages(bytes);
  expect(new Set(pages.map((page) => page.serial)).size).toBe(1);
  expect(pages.map((page) => page.sequence)).toEqual(pages.map((_, i) => i));
  expect(pages.map((page) => page.flags & 0x06)).toEqual(
    pages.map((_, i) => (i === 0 ? 2 : i === pages.length - 1 ? 4 : 0)),
  );
  const decoded = await decodeOggOpus(bytes);
  expect(decoded).toMatchObject({ channels: 1, inputSampleRate: 16000, crcOk: true, errors: 0 });
  return decoded.seconds;
}

/** Sync speech sent as it is made (decisions §7): every format it can have. */
describe('sync speech: a break after the first audio is continued on the next step', () => {
  let t: TestApp;
  const fakes: FakeMiniMax[] = [];
  let eleven: FakeElevenLabs;
  const TEXT = 'A sync answer that breaks after its first audio. It still comes out whole.';
  // pcm at 16 kHz mono: two bytes a sample
  const secondsOf = (bytes: number): number => bytes / 32000;

  beforeAll(async () => {
    for (let i = 0; i < 5; i++) fakes.push(await startFakeMiniMax({ name: `sync-cont-${i}` }));
    eleven = await startFakeElevenLabs({ name: 'sync-cont-eleven' });
    const providers = fakes
      .map((fake) => `  - { name: ${fake.name}, kind: minimax, base_url: "${fake.url}", api_key: k }\n`)
      .join('');
    const elevenLabs = `  - { name: ${eleven.name}, kind: elevenlabs, base_url: "${eleven.url}", api_key: k }\n`;
    t = await startApp({
      gateway: parseGatewayConfig(`providers:\n${providers}${elevenLabs}`, 'sync continuation test'),
      env: { DATABASE_URL: db.url },
    });
  });
  afterAll(async () => {
    await t?.close();
    for (const fake of fakes) await fake.close();
    await eleven?.close();
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
    // its usage record lists both providers
    const requestId = String(answer.headers['x-svc-request-id']);
    expect(await usageRecord(t, key.secret, requestId)).toMatchObject(continuedRecord(entry.name, fallback.name));
  });

  /** OpenAI's speech SSE answer of `secret`: its events, and the bytes of audio its deltas carried. */
  const speechEvents = async (secret: string) => {
    const answer = await t.http
      .post('/v1/audio/speech')
      .set('Authorization', `Bearer ${secret}`)
      .send({ model: 'speech-02-hd', input: TEXT, voice: 'alloy', response_format: 'pcm', stream_format: 'sse' })
      .buffer(true)
      .parse((res, done) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        res.on('end', () => done(null, text));
      });
    expect(answer.status).toBe(200);
    const events = (answer.body as string)
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: '))
      .map((frame) => JSON.parse(frame.slice(6)) as { type?: string; error?: unknown; audio?: string });
    const bytes = events
      .filter((e) => e.type === 'speech.audio.delta')
      .reduce((sum, e) => sum + Buffer.from(e.audio ?? '', 'base64').length, 0);
    return { events, bytes };
  };

  it("OpenAI's speech SSE: every delta, speech.audio.done and no error event", async () => {
    const [entry, fallback] = [fakes[1], fakes[2]];
    const clean = await speechEvents((await keyFor(fallback)).secret);
    entry.setMode('midStreamBaseRespError');
    const { events, bytes } = await speechEvents((await keyFor(entry, fallback)).secret);
    entry.setMode('ok');
    expect(events.some((e) => e.error !== undefined)).toBe(false);
    expect(events[events.length - 1].type).toBe('speech.audio.done');
    // the whole audio: within 25 % of the fallback's own clean answer (the broken sentence is heard twice at most)
    expect(clean.bytes).toBeGreaterThan(0);
    expect(Math.abs(bytes - clean.bytes) / clean.bytes).toBeLessThanOrEqual(0.25);
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
  /** The T2A requests a fake received: what it was asked to speak, and in which format. */
  const asked = (fake: FakeMiniMax): Array<{ text: string; format?: string }> =>
    fake.requests
      .filter((r) => r.path === '/v1/t2a_v2')
      .map((r) => r.body as { text: string; audio_setting?: { format?: string } })
      .map((body) => ({ text: body.text, format: body.audio_setting?.format }));
  const speech = (secret: string, body: object) =>
    t.http.post('/v1/audio/speech').set('Authorization', `Bearer ${secret}`).send(body).buffer(true);

  it.each(['flac', 'opus'] as const)(
    'POST /v1/audio/speech in %s: 200 and one stream that decodes whole, the rest from the fallback',
    async (format) => {
      const [entry, fallback] = [fakes[3], fakes[4]];
      const audio_setting = { format, sample_rate: 16000, channel: 1 };
      const clean = await speech((await keyFor(fallback)).secret, { ...minimaxBody, audio_setting });
      expect(clean.status).toBe(200);
      const cleanSeconds = await playedSeconds(format, clean.body as Buffer);

      entry.setMode('midStreamBaseRespError');
      entry.reset();
      fallback.reset();
      const answer = await speech((await keyFor(entry, fallback)).secret, { ...minimaxBody, audio_setting });
      entry.setMode('ok');
      expect(answer.status).toBe(200);
      expect(answer.headers['content-type']).toBe(format === 'flac' ? 'audio/flac' : 'audio/ogg;codecs=opus');
      expect(answer.headers['x-svc-audio-bitrate']).toBeUndefined();
      const seconds = await playedSeconds(format, answer.body as Buffer);
      expect(Math.abs(seconds - cleanSeconds) / cleanSeconds).toBeLessThanOrEqual(0.25);
      // every step was asked for pcm at the answer's rate, encoded by the gateway into one stream; the fallback
      // spoke the text from the sentence that was being spoken, with its own voice
      expect(asked(entry)).toEqual([{ text: TEXT, format: 'pcm' }]);
      expect(asked(fallback)).toEqual([{ text: TEXT, format: 'pcm' }]);
      const [request] = fallback.requests.filter((r) => r.path === '/v1/t2a_v2');
      expect(request.body).toMatchObject({
        voice_setting: { voice_id: 'female-shaonv' },
        audio_setting: { sample_rate: 16000, channel: 1 },
      });
    },
  );

  it("MiniMax's /v1/t2a_v2 with stream:true in flac: every event, the final one, one stream that decodes whole", async () => {
    const [entry, fallback] = [fakes[3], fakes[4]];
    const body = { ...minimaxBody, stream: true, audio_setting: { format: 'flac', sample_rate: 16000, channel: 1 } };
    const events = async (secret: string) => {
      const res = await fetch(`${t.url}/v1/t2a_v2`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${secret}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/event-stream');
      return (await res.text())
        .split('\n\n')
        .filter((frame) => frame.startsWith('data: '))
        .map(
          (frame) =>
            JSON.parse(frame.slice(6)) as {
              data?: { audio: string; status: number };
              extra_info?: { audio_length: number };
              base_resp: { status_code: number };
            },
        );
    };
    const streamed = (list: Awaited<ReturnType<typeof events>>): Buffer =>
      Buffer.from(
        list
          .filter((e) => e.data?.status === 1)
          .map((e) => e.data?.audio ?? '')
          .join(''),
        'hex',
      );
    const cleanSeconds = await playedSeconds('flac', streamed(await events((await keyFor(fallback)).secret)));

    entry.setMode('midStreamBaseRespError');
    entry.reset();
    fallback.reset();
    const answer = await events((await keyFor(entry, fallback)).secret);
    entry.setMode('ok');
    expect(answer.every((e) => e.base_resp.status_code === 0)).toBe(true);
    const final = answer[answer.length - 1];
    expect(final.data?.status).toBe(2);
    const audio = streamed(answer);
    // the final event carries the whole clip (exclude_aggregated_audio not asked), and its length
    expect(final.data?.audio).toBe(audio.toString('hex'));
    const seconds = await playedSeconds('flac', audio);
    expect(Math.abs(seconds - cleanSeconds) / cleanSeconds).toBeLessThanOrEqual(0.25);
    expect(Math.abs((final.extra_info?.audio_length ?? 0) / 1000 - seconds)).toBeLessThan(0.1);
    expect(asked(entry)).toEqual([{ text: TEXT, format: 'pcm' }]);
    expect(asked(fallback)).toEqual([{ text: TEXT, format: 'pcm' }]);
  });

  it('a chain of one step keeps its own flac (nothing could continue it), and a break still ends the answer broken', async () => {
    const entry = fakes[3];
    entry.setMode('midStreamBaseRespError');
    entry.reset();
    const answer = await speech((await keyFor(entry)).secret, {
      ...minimaxBody,
      audio_setting: { format: 'flac', sample_rate: 16000, channel: 1 },
    }).then(
      () => 'complete',
      () => 'cut',
    );
    entry.setMode('ok');
    expect(answer).toBe('cut');
    expect(asked(entry)).toEqual([{ text: TEXT, format: 'flac' }]);
  });

  it('wav is only sent whole: a provider that breaks mid-stream fails over before the first byte, to a whole wav', async () => {
    const fallback = fakes[4];
    // ElevenLabs streams pcm, which the gateway holds until the wav header can say the length
    const key = await t.createKey('sync wav', [
      { provider: eleven.name, model: 'eleven_multilingual_v2', voice_map: { '*': '21m00Tcm4TlvDq8ikWAM' } },
      { provider: fallback.name, model: 'speech-02-hd', voice_map: { '*': 'female-shaonv' } },
    ]);
    eleven.setMode('dropAfterFirstChunk');
    eleven.reset();
    fallback.reset();
    // the entry step is the first whose model is the one asked for
    const answer = await speech(key.secret, {
      ...minimaxBody,
      model: 'eleven_multilingual_v2',
      audio_setting: { format: 'wav', sample_rate: 16000, channel: 1 },
    });
    eleven.setMode('ok');
    expect(answer.status).toBe(200);
    expect(answer.headers).toMatchObject({ 'x-svc-provider-used': fallback.name, 'x-svc-fallback-level': '1' });
    const bytes = answer.body as Buffer;
    const wav = parseWavHeader(bytes);
    expect(wav).toMatchObject({ formatTag: 1, sampleRate: 16000, channels: 1, bitsPerSample: 16 });
    expect(wav.dataOffset + wav.dataLength).toBe(bytes.length);
    // the fallback's clip alone, asked of it as wav, with the whole text
    expect(Math.abs(wav.dataLength / 32000 - toneSeconds(TEXT))).toBeLessThan(0.05);
    expect(asked(fallback)).toEqual([{ text: TEXT, format: 'wav' }]);
    // the entry was asked first (its pcm began, then its connection dropped): an ordinary failover, not a mid-stream one
    expect(eleven.requests.length).toBeGreaterThan(0);
    const requestId = String(answer.headers['x-svc-request-id']);
    const [event] = await storedEvents(t, "type = 'failover' AND data->>'request_id' = $1", [requestId], 'event');
    expect(event.data).toMatchObject({ exhausted_provider: eleven.name, active_provider: fallback.name });
    expect(event.data).not.toHaveProperty('mid_stream');
  });
});
