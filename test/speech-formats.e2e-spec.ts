import { parseGatewayConfig } from '../src/config/gateway-config';
import { parseWavHeader } from '../src/audio/parse';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { audioFacts, TONE_HZ, toneSeconds } from './fakes/speech-audio';
import { startApp, TestApp } from './support/app';
import { decodeOggOpus } from './support/ogg-opus';
import { speak } from './support/speech';
import { StreamClient } from './support/ws-client';

jest.setTimeout(120000);

const MODEL = 'speech-02-hd';
const OPENAI_MODEL = 'gpt-4o-mini-tts';
const SENTENCE = 'Hello from the offline engine, in a newer format.';

type Body = Record<string, unknown>;
const bodyOf = (fake: { requests: Array<{ path: string; body?: unknown }> }, path: string): Body => {
  const found = fake.requests.filter((r) => r.path.split('?')[0].endsWith(path)).pop();
  if (!found) throw new Error(`the fake received nothing on ${path}`);
  return found.body as Body;
};

/**
 * The request shapes of today (decisions §10 "The upstreams move"): OpenAI's 13 voices, speed 0.25..4, opus and aac;
 * MiniMax's opus, pcmu_raw, pcmu_wav, force_cbr and word_streaming; on sync (both shapes), the stream and async tasks.
 * Provider names are unique to this file: circuits are shared by every test file of the run.
 */
describe('speech formats and fields of today', () => {
  let t: TestApp;
  let openai: FakeOpenAi;
  let minimax: FakeMiniMax;
  let espeakKey: string;
  let openaiKey: string;
  let minimaxKey: string;
  let mixedKey: string;

  beforeAll(async () => {
    [openai, minimax] = await Promise.all([
      startFakeOpenAi({ name: 'fmt-openai' }),
      startFakeMiniMax({ name: 'fmt-minimax' }),
    ]);
    const gateway = parseGatewayConfig(
      [
        'providers:',
        '  - { name: espeak, kind: espeak }',
        `  - { name: fmt-openai, kind: openai, base_url: "${openai.url}", api_key: k }`,
        `  - { name: fmt-minimax, kind: minimax, base_url: "${minimax.url}", api_key: k }`,
      ].join('\n'),
      'speech formats test',
    );
    t = await startApp({ gateway });
    espeakKey = (await t.createKey('fmt espeak', [{ provider: 'espeak', model: MODEL }])).secret;
    openaiKey = (await t.createKey('fmt openai', [{ provider: 'fmt-openai', model: OPENAI_MODEL }])).secret;
    minimaxKey = (await t.createKey('fmt minimax', [{ provider: 'fmt-minimax', model: MODEL }])).secret;
    mixedKey = (
      await t.createKey('fmt mixed', [
        { provider: 'espeak', model: MODEL },
        { provider: 'fmt-openai', model: OPENAI_MODEL, voice_map: { '*': 'marin' } },
      ])
    ).secret;
  });
  afterAll(async () => {
    await t.close();
    await Promise.all([openai.close(), minimax.close()]);
  });
  beforeEach(() => {
    openai.reset();
    minimax.reset();
  });

  describe("OpenAI's shape", () => {
    it.each(['marin', 'cedar'])('lists the built-in voice %s and sends it to an OpenAI step', async (voice) => {
      const listed = (await t.http.get('/v1/audio/voices').set('Authorization', `Bearer ${openaiKey}`)).body as {
        data: Array<{ id: string }>;
      };
      expect(listed.data.map((v) => v.id)).toContain(voice);
      const res = await speak(t, openaiKey, { model: OPENAI_MODEL, input: 'Hi.', voice, response_format: 'pcm' });
      expect(res.status).toBe(200);
      expect(bodyOf(openai, '/v1/audio/speech')).toMatchObject({ voice, model: OPENAI_MODEL });
    });

    it.each([0.25, 4])('sends speed %s to an OpenAI step as it was asked', async (speed) => {
      const res = await speak(t, openaiKey, { model: OPENAI_MODEL, input: 'Hi.', voice: 'alloy', speed });
      expect(res.status).toBe(200);
      expect(bodyOf(openai, '/v1/audio/speech')).toMatchObject({ speed });
    });

    it('clamps speed 0.25 to MiniMax’s 0.5 on a MiniMax step', async () => {
      const res = await speak(t, minimaxKey, { model: MODEL, input: 'Hi.', voice: 'male-qn-qingse', speed: 0.25 });
      expect(res.status).toBe(200);
      expect(bodyOf(minimax, '/t2a_v2')).toMatchObject({ voice_setting: { speed: 0.5 } });
    });

    it.each([4.5, 0.2])('refuses speed %s with 400 naming speed', async (speed) => {
      const res = await speak(t, espeakKey, { model: MODEL, input: 'Hi.', voice: 'en-us', speed });
      expect(res.status).toBe(400);
      expect(JSON.parse(res.bytes.toString())).toMatchObject({ error: { code: 'invalid_value', param: 'speed' } });
    });

    it('makes opus from espeak: Ogg Opus that an independent decoder plays for as long as the speech', async () => {
      const [opus, pcm] = await Promise.all(
        ['opus', 'pcm'].map((format) =>
          speak(t, espeakKey, { model: MODEL, input: SENTENCE, voice: 'en-us', response_format: format }),
        ),
      );
      expect(opus.status).toBe(200);
      expect(opus.headers.get('content-type')).toBe('audio/ogg;codecs=opus');
      expect(opus.headers.get('content-disposition')).toMatch(/\.ogg"$/);
      expect(opus.bytes.toString('latin1', 0, 4)).toBe('OggS');
      expect(opus.bytes.includes(Buffer.from('OpusHead'))).toBe(true);
      const decoded = await decodeOggOpus(opus.bytes);
      expect(decoded).toMatchObject({ channels: 1, inputSampleRate: 24000, crcOk: true, errors: 0 });
      // the same text as pcm (24 kHz mono, 16-bit) gives the length the Opus file must play for
      const pcmSeconds = pcm.bytes.length / 2 / 24000;
      expect(pcmSeconds).toBeGreaterThan(1);
      expect(Math.abs(decoded.seconds - pcmSeconds)).toBeLessThan(0.03);
    });

    it('refuses aac from espeak with format_not_supported naming the steps that can', async () => {
      const alone = await speak(t, espeakKey, { model: MODEL, input: 'Hi.', voice: 'en-us', response_format: 'aac' });
      expect(alone.status).toBe(400);
      expect(JSON.parse(alone.bytes.toString())).toMatchObject({
        error: { code: 'format_not_supported', param: 'response_format', message: expect.stringMatching(/openai/) },
      });
      const mixed = await speak(t, mixedKey, { model: MODEL, input: 'Hi.', voice: 'en-us', response_format: 'aac' });
      expect(mixed.status).toBe(400);
      const { error } = JSON.parse(mixed.bytes.toString()) as { error: { code: string; message: string } };
      expect(error.code).toBe('format_not_supported');
      expect(error.message).toContain(`fmt-openai (model '${OPENAI_MODEL}')`);
      expect(openai.requests).toHaveLength(0);
    });

    it('passes aac through from an OpenAI step, asked of OpenAI as aac', async () => {
      const res = await speak(t, openaiKey, {
        model: OPENAI_MODEL,
        input: 'Hi.',
        voice: 'ash',
        response_format: 'aac',
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('audio/aac');
      expect(bodyOf(openai, '/v1/audio/speech')).toMatchObject({ response_format: 'aac' });
      expect([...res.bytes.subarray(0, 2)]).toEqual([0xff, 0xf1]); // the fake's ADTS header, untouched
    });

    it('makes opus from an OpenAI step out of the pcm it asks for', async () => {
      const res = await speak(t, openaiKey, {
        model: OPENAI_MODEL,
        input: 'Hi.',
        voice: 'ash',
        response_format: 'opus',
      });
      expect(res.status).toBe(200);
      expect(bodyOf(openai, '/v1/audio/speech')).toMatchObject({ response_format: 'pcm' });
      const decoded = await decodeOggOpus(res.bytes);
      expect(decoded.crcOk).toBe(true);
      expect(decoded.seconds).toBeCloseTo(toneSeconds('Hi.'), 1);
    });
  });

  describe("MiniMax's shape", () => {
    const minimaxBody = (format: string, extra: Body = {}, voice = 'en-us'): Body => ({
      model: MODEL,
      text: SENTENCE,
      voice_setting: { voice_id: voice },
      audio_setting: { format, ...extra },
    });

    it('makes pcmu_raw and pcmu_wav from espeak: G.711 µ-law at 8 kHz unless sample_rate says otherwise', async () => {
      const raw = await speak(t, espeakKey, minimaxBody('pcmu_raw'));
      expect(raw.status).toBe(200);
      expect(raw.headers.get('content-type')).toBe('audio/PCMU;rate=8000;channels=1');
      const rawFacts = audioFacts(raw.bytes, 'pcmu_raw', raw.headers.get('content-type') ?? '');
      expect(rawFacts.seconds).toBeGreaterThan(1);

      const wav = await speak(t, espeakKey, minimaxBody('pcmu_wav', { sample_rate: 16000, channel: 2 }));
      expect(wav.status).toBe(200);
      expect(wav.headers.get('content-type')).toBe('audio/wav');
      expect(parseWavHeader(wav.bytes)).toMatchObject({
        formatTag: 7,
        bitsPerSample: 8,
        sampleRate: 16000,
        channels: 2,
      });
      // the same speech at both rates: the µ-law bytes hold it in full
      expect(audioFacts(wav.bytes, 'pcmu_wav', 'audio/wav').seconds).toBeCloseTo(rawFacts.seconds ?? 0, 1);
    });

    it('makes opus from espeak at a rate Opus does not take (22050 Hz: resampled, played at its length)', async () => {
      const res = await speak(t, espeakKey, minimaxBody('opus', { sample_rate: 22050, channel: 2 }));
      expect(res.status).toBe(200);
      const decoded = await decodeOggOpus(res.bytes);
      expect(decoded).toMatchObject({ channels: 2, inputSampleRate: 22050, crcOk: true, errors: 0 });
      expect(decoded.seconds).toBeGreaterThan(1);
    });

    it.each([
      ['opus', {}],
      ['pcmu_raw', {}],
      ['pcmu_wav', { sample_rate: 8000 }],
    ])('passes %s through from a MiniMax step, asked of MiniMax as it is', async (format, extra) => {
      const res = await speak(t, minimaxKey, minimaxBody(format, extra, 'male-qn-qingse'));
      expect(res.status).toBe(200);
      const sent = bodyOf(minimax, '/t2a_v2');
      expect(sent).toMatchObject({ audio_setting: { format }, stream: format !== 'pcmu_wav' });
      const facts = audioFacts(res.bytes, format as 'opus', res.headers.get('content-type') ?? '');
      expect(facts.seconds).toBeCloseTo(toneSeconds(SENTENCE), 1);
      if (format !== 'opus') expect(facts.frequency).toBeCloseTo(TONE_HZ, -1);
      if (format === 'pcmu_raw') expect((sent.audio_setting as Body).sample_rate).toBe(8000);
    });

    it('forwards force_cbr and subtitle_type word_streaming to a MiniMax step', async () => {
      const res = await speak(t, minimaxKey, {
        ...minimaxBody('mp3', { force_cbr: true }, 'male-qn-qingse'),
        subtitle_enable: true,
        subtitle_type: 'word_streaming',
      });
      expect(res.status).toBe(200);
      expect(bodyOf(minimax, '/t2a_v2')).toMatchObject({
        audio_setting: { format: 'mp3', force_cbr: true },
        subtitle_type: 'word_streaming',
      });
      expect(res.headers.get('x-svc-ignored-fields')?.split(', ')).not.toContain('audio_setting.force_cbr');
    });

    it('names force_cbr and subtitle_type ignored on an espeak step', async () => {
      const res = await speak(t, espeakKey, {
        ...minimaxBody('mp3', { force_cbr: false }),
        subtitle_type: 'word_streaming',
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-svc-ignored-fields')?.split(', ')).toEqual(
        expect.arrayContaining(['audio_setting.force_cbr', 'subtitle_type']),
      );
    });

    it.each([
      ['opus', (audio: Buffer) => decodeOggOpus(audio).then((d) => d.seconds)],
      ['pcmu_raw', (audio: Buffer) => Promise.resolve(audio.length / 8000)],
    ])('answers MiniMax-native /v1/t2a_v2 in %s with extra_info saying its length', async (format, secondsOf) => {
      const res = await fetch(`${t.url}/v1/t2a_v2`, {
        method: 'POST',
        headers: { authorization: `Bearer ${espeakKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(minimaxBody(format)),
      });
      const answer = (await res.json()) as {
        data: { audio: string };
        extra_info: { audio_length: number; audio_format: string };
        base_resp: { status_code: number };
      };
      expect(answer.base_resp.status_code).toBe(0);
      expect(answer.extra_info.audio_format).toBe(format);
      const seconds = await secondsOf(Buffer.from(answer.data.audio, 'hex'));
      expect(seconds).toBeGreaterThan(1);
      expect(Math.abs(answer.extra_info.audio_length - seconds * 1000)).toBeLessThan(30);
    });

    it('refuses aac in MiniMax’s shape as a value it does not define', async () => {
      const res = await speak(t, espeakKey, minimaxBody('aac'));
      expect(res.status).toBe(400);
      expect(JSON.parse(res.bytes.toString())).toMatchObject({ error: { param: 'audio_setting.format' } });
    });
  });

  describe('the stream and async tasks', () => {
    const START = { event: 'task_start', model: MODEL, voice_setting: { voice_id: 'en-us' } };
    const stream = async (format: string): Promise<StreamClient> => {
      const client = await StreamClient.connect(`${t.url.replace('http', 'ws')}/v1/audio/speech/stream`, {
        Authorization: `Bearer ${espeakKey}`,
      });
      client.send({ ...START, audio_setting: { format, sample_rate: 16000 } });
      return client;
    };

    it.each([
      ['opus', async (bytes: Buffer) => (await decodeOggOpus(bytes)).seconds],
      ['pcmu_raw', (bytes: Buffer) => Promise.resolve(bytes.length / 16000)],
    ])('streams one continuous %s stream across the texts of a WebSocket task', async (format, secondsOf) => {
      const client = await stream(format);
      await client.waitFor((m) => m.event === 'task_started');
      client.send({ event: 'task_continue', text: 'One sentence here.' });
      client.send({ event: 'task_continue', text: 'And another one, sent later.' });
      client.send({ event: 'task_finish' });
      await client.waitFor((m) => m.event === 'task_finished');
      const finals = client.messages.filter((m) => m.event === 'task_continued' && m.is_final);
      expect(finals).toHaveLength(2);
      expect(await secondsOf(client.audio())).toBeGreaterThan(1.5);
    });

    it('refuses pcmu_wav on the stream: its header needs the length', async () => {
      const client = await stream('pcmu_wav');
      const failed = await client.waitFor((m) => m.event === 'task_failed');
      expect(failed).toMatchObject({ error: { code: 'invalid_value' } });
      expect(JSON.stringify(failed)).toContain('pcmu_wav cannot be streamed');
    });

    it.each([
      ['opus', 'audio/ogg;codecs=opus'],
      ['pcmu_wav', 'audio/wav'],
    ])('runs a %s async task to a download of that format', async (format, contentType) => {
      const auth = { Authorization: `Bearer ${espeakKey}` };
      const created = await t.http
        .post('/v1/audio/speech/async')
        .set(auth)
        .send({ model: MODEL, text: `${SENTENCE} ${SENTENCE}`, audio_setting: { format, sample_rate: 16000 } });
      expect(created.status).toBe(202);
      const id = (created.body as { id: string }).id;
      const deadline = Date.now() + 60000;
      let status = '';
      while (status !== 'completed' && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 150));
        status = ((await t.http.get(`/v1/audio/speech/async/${id}`).set(auth)).body as { status: string }).status;
        expect(status).not.toBe('failed');
      }
      const res = await fetch(`${t.url}/v1/audio/speech/async/${id}/download`, { headers: auth });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(contentType);
      const bytes = Buffer.from(await res.arrayBuffer());
      const seconds =
        format === 'opus'
          ? (await decodeOggOpus(bytes)).seconds
          : (audioFacts(bytes, 'pcmu_wav', contentType).seconds ?? 0);
      expect(seconds).toBeGreaterThan(2);
      if (format === 'pcmu_wav') expect(parseWavHeader(bytes)).toMatchObject({ formatTag: 7, sampleRate: 16000 });
    });
  });
});
