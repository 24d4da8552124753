import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { parseGatewayConfig } from '../src/config/gateway-config';
import type { AudioFormat } from '../src/audio/encoders';
import { parseFirstMp3Frame } from '../src/audio/parse';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { audioFacts } from './fakes/speech-audio';
import { startApp, TestApp } from './support/app';
import { eventually, REQUEST_ID, sleep } from './support/failover';
import { rms, speak, SPEECH_PATH } from './support/speech';

// every synthesis below is real work for the offline engine
jest.setTimeout(120000);

const MODEL = 'speech-02-hd';
const SENTENCE = 'Hello from the offline engine.';

describe('synchronous speech with the offline engine', () => {
  let t: TestApp;
  let secret: string;
  let minimax: FakeMiniMax;

  beforeAll(async () => {
    minimax = await startFakeMiniMax({ name: 'sp-sync-minimax' });
    const gateway = parseGatewayConfig(
      [
        'providers:',
        '  - { name: echo, kind: echo }',
        '  - { name: espeak, kind: espeak }',
        `  - { name: sp-sync-minimax, kind: minimax, base_url: "${minimax.url}", api_key: k }`,
      ].join('\n'),
      'sync speech test',
    );
    t = await startApp({ gateway });
    secret = (await t.createKey('sync speech', [{ provider: 'espeak', model: MODEL }])).secret;
  });
  afterAll(async () => {
    await t.close();
    await minimax.close();
  });

  const CONTENT_TYPES: Record<AudioFormat, (rate: number, channels: number) => string> = {
    mp3: () => 'audio/mpeg',
    wav: () => 'audio/wav',
    flac: () => 'audio/flac',
    pcm: (rate, channels) => `audio/L16;rate=${rate};channels=${channels}`,
  };
  // two rates per format, all six allowed rates over the table; MPEG-2.5, -2 and -1 for mp3
  const RATES: Record<AudioFormat, [number, number]> = {
    mp3: [8000, 44100],
    wav: [16000, 32000],
    pcm: [22050, 24000],
    flac: [16000, 44100],
  };
  const CASES = (Object.keys(RATES) as AudioFormat[]).flatMap((format) =>
    RATES[format].flatMap((rate) => [1, 2].map((channels) => [format, rate, channels] as const)),
  );

  it.each(CASES)(
    'speaks %s at %i Hz with %i channel(s): the bytes say so, not only the Content-Type',
    async (format, rate, channels) => {
      const res = await speak(t, secret, {
        model: MODEL,
        text: SENTENCE,
        voice_setting: { voice_id: 'en-us' },
        audio_setting: { format, sample_rate: rate, channel: channels },
      });
      expect(res.status).toBe(200);
      const contentType = res.headers.get('content-type') ?? '';
      expect(contentType).toBe(CONTENT_TYPES[format](rate, channels));
      expect(res.headers.get('x-svc-provider-used')).toBe('espeak');
      expect(res.headers.get('x-svc-is-fallback')).toBe('false');
      expect(res.headers.get('x-svc-fallback-level')).toBe('0');
      expect(res.headers.get('x-svc-fallback-alert')).toBeNull();
      expect(res.headers.get('x-svc-request-id')).toMatch(REQUEST_ID);

      // audioFacts throws unless the container is whole: uniform mp3 frames to the last byte, a 16-bit WAV whose data chunk ends the file, whole pcm frames
      const facts = audioFacts(res.bytes, format, contentType);
      expect(facts).toMatchObject({ sampleRate: rate, channels });
      // five English words at espeak's pace; a streamed FLAC does not know its length in STREAMINFO
      if (facts.seconds !== null) {
        expect(facts.seconds).toBeGreaterThan(1);
        expect(facts.seconds).toBeLessThan(5);
      }
      if (format === 'mp3')
        expect(Number(res.headers.get('x-svc-audio-bitrate'))).toBe(parseFirstMp3Frame(res.bytes).bitrate);
      else expect(res.headers.get('x-svc-audio-bitrate')).toBeNull();
      if (format === 'wav' || format === 'pcm') {
        const data = format === 'wav' ? res.bytes.subarray(44) : res.bytes;
        expect(rms(data)).toBeGreaterThan(0.01); // speech, not silence
      }
    },
  );

  it('answers mp3 by default: 32 kHz mono at 128 kbit/s', async () => {
    const res = await speak(t, secret, { model: MODEL, text: SENTENCE, voice_setting: { voice_id: 'en-us' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('audio/mpeg');
    expect(res.headers.get('x-svc-audio-bitrate')).toBe('128000');
    expect(parseFirstMp3Frame(res.bytes)).toMatchObject({
      sampleRate: 32000,
      channels: 1,
      bitrate: 128000,
      version: '1',
      layer: 3,
    });
  });

  it.each([
    [8000, 1, 128000, 64000],
    [16000, 1, 256000, 160000],
    [44100, 2, 32000, 112000],
    [24000, 2, 64000, 64000],
  ])(
    'encodes mp3 at %i Hz, %i channel(s), asked for %i bit/s, at %i bit/s and says so in x-svc-audio-bitrate',
    async (rate, channels, asked, real) => {
      const res = await speak(t, secret, {
        model: MODEL,
        text: SENTENCE,
        voice_setting: { voice_id: 'en-us' },
        audio_setting: { format: 'mp3', sample_rate: rate, channel: channels, bitrate: asked },
      });
      expect(res.status).toBe(200);
      const frame = parseFirstMp3Frame(res.bytes);
      expect(frame).toMatchObject({ sampleRate: rate, channels, bitrate: real });
      expect(res.headers.get('x-svc-audio-bitrate')).toBe(String(real));
    },
  );

  it('honours speed and vol, and accepts pitch at both ends of its range', async () => {
    const pcm = { format: 'pcm', sample_rate: 16000, channel: 1 };
    const say = async (voice: Record<string, number>): Promise<Buffer> => {
      const res = await speak(t, secret, {
        model: MODEL,
        text: SENTENCE,
        voice_setting: { voice_id: 'en-us', ...voice },
        audio_setting: pcm,
      });
      expect(res.status).toBe(200);
      return res.bytes;
    };
    const normal = await say({});
    const fast = await say({ speed: 2 });
    const slow = await say({ speed: 0.5 });
    expect(fast.length).toBeLessThan(normal.length * 0.75);
    expect(slow.length).toBeGreaterThan(normal.length * 1.4);

    const quiet = await say({ vol: 0.2 });
    const loud = await say({ vol: 3 });
    expect(rms(quiet)).toBeLessThan(rms(normal) * 0.5);
    expect(rms(loud)).toBeGreaterThan(rms(normal) * 1.5);

    for (const pitch of [-12, 12]) expect((await say({ pitch })).length).toBeGreaterThan(0);
    const extremes = await say({ speed: 0.5, vol: 10, pitch: -12 });
    expect(extremes.length).toBeGreaterThan(0);
  });

  it('records a client that leaves while its audio waits on a full socket as 499, and does not hang', async () => {
    // about 3 minutes of speech at 44.1 kHz stereo: ~30 MB, far more than the socket buffers hold
    const text = Array.from(
      { length: 40 },
      (_, i) => `Sentence number ${i + 1} keeps the engine busy for a while longer.`,
    ).join(' ');
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpRequest(`${t.url}${SPEECH_PATH}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      });
      req.on('response', resolve);
      req.on('error', reject);
      req.end(
        JSON.stringify({
          model: MODEL,
          text,
          voice_setting: { voice_id: 'en-us' },
          audio_setting: { format: 'pcm', sample_rate: 44100, channel: 2 },
        }),
      );
    });
    expect(response.statusCode).toBe(200);
    const requestId = String(response.headers['x-svc-request-id']);
    // read a little, then nothing, so the gateway's writes back up; then leave
    await once(response, 'data');
    response.pause();
    await sleep(1500);
    response.destroy();

    const usage = async (): Promise<Array<Record<string, unknown>>> => {
      const res = await t.http
        .get('/v1/usage')
        .query({ request_id: requestId })
        .set('Authorization', `Bearer ${secret}`);
      return res.body.data as Array<Record<string, unknown>>;
    };
    const [record] = await eventually(
      usage,
      (records) => records.length === 1,
      5000,
      'usage record of the abandoned request',
    );
    expect(record).toMatchObject({ request_id: requestId, provider: 'espeak', status: 499 });
  });

  describe('validation (decisions §7): 4xx with the field in `param`, before any upstream call', () => {
    let minimaxSecret: string;
    beforeAll(async () => {
      minimaxSecret = (
        await t.createKey('validation', [
          { provider: 'sp-sync-minimax', model: MODEL, voice_map: { narrator: 'male-qn-qingse' } },
        ])
      ).secret;
      minimax.reset();
    });

    const valid = { model: MODEL, text: 'Hi.', voice_setting: { voice_id: 'narrator' } };
    const withVoice = (fields: Record<string, unknown>): Record<string, unknown> => ({
      ...valid,
      voice_setting: { voice_id: 'narrator', ...fields },
    });
    const withAudio = (fields: Record<string, unknown>): Record<string, unknown> => ({
      ...valid,
      audio_setting: fields,
    });
    const without = (field: string): Record<string, unknown> =>
      Object.fromEntries(Object.entries(valid).filter(([name]) => name !== field));

    it.each<[string, unknown, number, string, string | null]>([
      ['no model', without('model'), 400, 'missing_field', 'model'],
      ['a model that is not a string', { ...valid, model: 2 }, 400, 'invalid_value', 'model'],
      [
        'a model no step of the chain serves',
        { ...valid, model: 'speech-01-turbo' },
        400,
        'model_not_supported',
        'model',
      ],
      ['no text', without('text'), 400, 'missing_field', 'text'],
      ['empty text', { ...valid, text: '' }, 400, 'invalid_value', 'text'],
      ['text over 10,000 characters', { ...valid, text: 'a'.repeat(10001) }, 413, 'text_too_long', 'text'],
      ['no voice_setting', without('voice_setting'), 400, 'missing_field', 'voice_setting'],
      ['no voice_id', { ...valid, voice_setting: { speed: 1 } }, 400, 'missing_field', 'voice_setting.voice_id'],
      [
        'a voice the entry step cannot map or speak',
        withVoice({ voice_id: 'Not a voice!' }),
        400,
        'voice_not_found',
        'voice_setting.voice_id',
      ],
      ['speed 0.4', withVoice({ speed: 0.4 }), 400, 'invalid_value', 'voice_setting.speed'],
      ['speed 2.1', withVoice({ speed: 2.1 }), 400, 'invalid_value', 'voice_setting.speed'],
      ['speed as a string', withVoice({ speed: '1' }), 400, 'invalid_value', 'voice_setting.speed'],
      ['vol 0', withVoice({ vol: 0 }), 400, 'invalid_value', 'voice_setting.vol'],
      ['vol 10.5', withVoice({ vol: 10.5 }), 400, 'invalid_value', 'voice_setting.vol'],
      ['pitch 1.5 (not an integer)', withVoice({ pitch: 1.5 }), 400, 'invalid_value', 'voice_setting.pitch'],
      ['pitch 13', withVoice({ pitch: 13 }), 400, 'invalid_value', 'voice_setting.pitch'],
      ['pitch -13', withVoice({ pitch: -13 }), 400, 'invalid_value', 'voice_setting.pitch'],
      [
        'a voice_setting field MiniMax does not define',
        withVoice({ mood: 'happy' }),
        400,
        'unknown_field',
        'voice_setting.mood',
      ],
      [
        'an emotion MiniMax does not define',
        withVoice({ emotion: 'elated' }),
        400,
        'invalid_value',
        'voice_setting.emotion',
      ],
      ['sample_rate 48000', withAudio({ sample_rate: 48000 }), 400, 'invalid_value', 'audio_setting.sample_rate'],
      ['bitrate 96000', withAudio({ bitrate: 96000 }), 400, 'invalid_value', 'audio_setting.bitrate'],
      ['format ogg', withAudio({ format: 'ogg' }), 400, 'invalid_value', 'audio_setting.format'],
      ['channel 3', withAudio({ channel: 3 }), 400, 'invalid_value', 'audio_setting.channel'],
      ['channel 0', withAudio({ channel: 0 }), 400, 'invalid_value', 'audio_setting.channel'],
      [
        'an unknown audio_setting field',
        withAudio({ format: 'mp3', volume: 2 }),
        400,
        'unknown_field',
        'audio_setting.volume',
      ],
      [
        'audio_setting that is not an object',
        { ...valid, audio_setting: 'mp3' },
        400,
        'invalid_value',
        'audio_setting',
      ],
      ['a top-level field MiniMax does not define', { ...valid, streaming: true }, 400, 'unknown_field', 'streaming'],
      ['malformed JSON', '{"model": "speech-02-hd", "text": ', 400, 'invalid_json', null],
    ])('refuses %s', async (_, body, status, code, param) => {
      const res = await speak(t, minimaxSecret, body);
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.headers.get('x-svc-request-id')).toMatch(REQUEST_ID);
      expect(JSON.parse(res.bytes.toString('utf8'))).toEqual({
        error: { type: 'invalid_request_error', code, param, message: expect.any(String) },
      });
    });

    it('refuses a request without a key with 401 and the error body', async () => {
      const res = await fetch(`${t.url}${SPEECH_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(valid),
      });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('missing_api_key');
    });

    it('sent none of the refused requests upstream', () => {
      expect(minimax.count('/v1/t2a_v2')).toBe(0);
    });
  });

  describe('GET /v1/audio/voices', () => {
    interface Voice {
      id: string;
      object: string;
      name: string;
      provider: string;
      languages: string[];
      type: string;
    }
    const voices = async (token: string): Promise<Voice[]> => {
      const res = await t.http.get('/v1/audio/voices').set('Authorization', `Bearer ${token}`);
      expect(res.status).toBe(200);
      expect(res.body.object).toBe('list');
      return res.body.data as Voice[];
    };

    it("lists the built-in voices of every speech provider in the key's chain, and none of its chat-only steps", async () => {
      const key = await t.createKey('voices', [
        { provider: 'echo', model: 'echo-1' },
        { provider: 'sp-sync-minimax', model: MODEL },
        { provider: 'espeak', model: MODEL },
      ]);
      const list = await voices(key.secret);
      for (const voice of list) {
        expect(voice).toEqual({
          id: expect.any(String),
          object: 'audio.voice',
          name: expect.any(String),
          provider: expect.any(String),
          languages: expect.any(Array),
          type: 'builtin',
        });
      }
      expect(new Set(list.map((v) => v.provider))).toEqual(new Set(['sp-sync-minimax', 'espeak']));
      expect(list).toContainEqual(
        expect.objectContaining({ id: 'en-us', provider: 'espeak', languages: expect.arrayContaining(['en-us']) }),
      );
      expect(list).toContainEqual(expect.objectContaining({ id: 'male-qn-qingse', provider: 'sp-sync-minimax' }));
      const espeakIds = list.filter((v) => v.provider === 'espeak').map((v) => v.id);
      expect(new Set(espeakIds).size).toBe(espeakIds.length);
    });

    it('lists only the providers of the asking key, and nothing for a chat-only key', async () => {
      expect(new Set((await voices(secret)).map((v) => v.provider))).toEqual(new Set(['espeak']));
      const chatOnly = await t.createKey('chat only', [{ provider: 'echo', model: 'echo-1' }]);
      expect(await voices(chatOnly.secret)).toEqual([]);
    });

    it('every listed espeak voice id is accepted as voice_id', async () => {
      const list = (await voices(secret)).filter((v) => v.provider === 'espeak');
      const sample = [list[0], list[Math.floor(list.length / 2)], list[list.length - 1]];
      for (const voice of sample) {
        const res = await speak(t, secret, {
          model: MODEL,
          text: 'One.',
          voice_setting: { voice_id: voice.id },
          audio_setting: { format: 'pcm', sample_rate: 8000 },
        });
        expect({ voice: voice.id, status: res.status }).toEqual({ voice: voice.id, status: 200 });
      }
    });
  });
});
