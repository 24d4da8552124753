import { FakeMiniMax } from './fakes/fake-minimax';
import { TestApp } from './support/app';
import { REQUEST_ID } from './support/failover';
import { speak, SPEECH_PATH } from './support/speech';
import { startSyncSpeechApp, SYNC_SPEECH_MODEL as MODEL } from './support/speech-sync-app';

// What synchronous speech refuses, and the voices it lists; the audio it makes: speech.e2e-spec.ts.

// the voices' check is real work for the offline engine
jest.setTimeout(120000);

describe('synchronous speech with the offline engine: validation and voices', () => {
  let t: TestApp, secret: string, minimax: FakeMiniMax, close: () => Promise<void>;
  beforeAll(async () => ({ t, secret, minimax, close } = await startSyncSpeechApp()));
  afterAll(() => close());

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
