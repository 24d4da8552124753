import { parseGatewayConfig } from '../src/config/gateway-config';
import { parseFirstMp3Frame } from '../src/audio/parse';
import { FakeElevenLabs, startFakeElevenLabs } from './fakes/fake-elevenlabs';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { startApp, TestApp } from './support/app';
import { speak } from './support/speech';
import { MODEL, request } from './support/speech-fields';

jest.setTimeout(120000);

const T2A = '/v1/t2a_v2';
const IGNORED = 'x-svc-ignored-fields';

/** Every optional field MiniMax's T2A v2 reference defines, with a value in its range. */
const MINIMAX_FIELDS = {
  stream: true,
  stream_options: { exclude_aggregated_audio: true },
  output_format: 'hex',
  language_boost: 'English',
  pronunciation_dict: { tone: ['omg/oh my god'] },
  timbre_weights: [
    { voice_id: 'female-shaonv', weight: 30 },
    { voice_id: 'English_Graceful_Lady', weight: 70 },
  ],
  voice_modify: { pitch: -20, intensity: 15, timbre: 0, sound_effects: 'spacious_echo' },
  subtitle_enable: true,
  subtitle_type: 'sentence',
  continuous_sound: true,
  aigc_watermark: false,
};
const VOICE_FIELDS = { emotion: 'happy', text_normalization: true, english_normalization: true, latex_read: false };

const ignoredOf = (headers: Headers): string[] => (headers.get(IGNORED) ?? '').split(', ').filter(Boolean);

/**
 * MiniMax's optional request fields (decisions §7): accepted on the sync and async routes (the WebSocket's
 * task_start is covered by its message parser's unit test), forwarded as sent to a MiniMax step, used where
 * another kind can express them, and what was not used is named in `x-svc-ignored-fields`. What is refused:
 * speech-fields-refused.e2e-spec.ts.
 */
describe("MiniMax's optional speech fields", () => {
  let t: TestApp;
  let minimax: FakeMiniMax;
  let openai: FakeOpenAi;
  let eleven: FakeElevenLabs;
  const secrets: Record<string, string> = {};

  beforeAll(async () => {
    [minimax, openai, eleven] = await Promise.all([
      startFakeMiniMax({ name: 'sf-minimax' }),
      startFakeOpenAi({ name: 'sf-openai' }),
      startFakeElevenLabs({ name: 'sf-eleven' }),
    ]);
    const provider = (name: string, kind: string, url: string): string =>
      `  - { name: ${name}, kind: ${kind}, base_url: "${url}", api_key: k }`;
    const gateway = parseGatewayConfig(
      [
        'providers:',
        '  - { name: espeak, kind: espeak }',
        provider('sf-minimax', 'minimax', minimax.url),
        provider('sf-openai', 'openai', openai.url),
        provider('sf-eleven', 'elevenlabs', eleven.url),
      ].join('\n'),
      'speech fields test',
    );
    t = await startApp({ gateway });
    secrets.minimax = (await t.createKey('sf minimax', [{ provider: 'sf-minimax', model: MODEL }])).secret;
    secrets.espeak = (await t.createKey('sf espeak', [{ provider: 'espeak', model: MODEL }])).secret;
    secrets.openai = (
      await t.createKey('sf openai', [{ provider: 'sf-openai', model: MODEL, voice_map: { '*': 'alloy' } }])
    ).secret;
    secrets.eleven = (
      await t.createKey('sf eleven', [
        { provider: 'sf-eleven', model: MODEL, voice_map: { '*': '21m00Tcm4TlvDq8ikWAM' } },
      ])
    ).secret;
  });
  afterAll(async () => {
    await t.close();
    await Promise.all([minimax.close(), openai.close(), eleven.close()]);
  });
  beforeEach(() => {
    for (const fake of [minimax, openai, eleven]) fake.reset();
  });

  it('sends every field to a MiniMax step as the client sent it, and answers with the audio bytes', async () => {
    const res = await speak(t, secrets.minimax, request('male-qn-qingse', MINIMAX_FIELDS, VOICE_FIELDS));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('audio/mpeg');
    expect(parseFirstMp3Frame(res.bytes)).toMatchObject({ sampleRate: 32000 });
    const sent = minimax.requests.filter((r) => r.path === T2A).map((r) => r.body as Record<string, unknown>);
    expect(sent).toHaveLength(1);
    const { stream: _stream, stream_options: _options, output_format: _format, ...shaping } = MINIMAX_FIELDS;
    expect(sent[0]).toMatchObject({
      ...shaping,
      voice_setting: { voice_id: 'male-qn-qingse', speed: 1.2, pitch: 2, vol: 1, ...VOICE_FIELDS },
    });
    // the gateway still asks for hex, streamed, and re-serves the bytes itself
    expect(sent[0]).toMatchObject({ stream: true, stream_options: { exclude_aggregated_audio: true } });
    expect(sent[0]).not.toHaveProperty('output_format');
    // the audio answer carries neither hex/url nor a subtitle file
    expect(ignoredOf(res.headers)).toEqual(['output_format', 'subtitle_enable', 'subtitle_type']);
  });

  it.each([
    ['hex JSON', { output_format: 'hex' }],
    ['SSE', { stream: true }],
  ])(
    'names on /v1/t2a_v2 (%s) what /v1/audio/speech names for the same body, output_format aside',
    async (_label, transport) => {
      const body = request('en-us', { language_boost: 'English', subtitle_enable: true, ...transport }, VOICE_FIELDS);
      const speech = await speak(t, secrets.espeak, { ...body, output_format: 'hex' });
      const native = await fetch(`${t.url}${T2A}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secrets.espeak}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      await native.arrayBuffer();
      expect([speech.status, native.status]).toEqual([200, 200]);
      const expected = [
        'voice_setting.emotion',
        'voice_setting.text_normalization',
        'voice_setting.english_normalization',
        'voice_setting.latex_read',
        'language_boost',
        'subtitle_enable',
      ];
      expect(ignoredOf(speech.headers).sort()).toEqual([...expected, 'output_format'].sort());
      // MiniMax's own route answers output_format (hex or url) and stream itself: only those are not named
      expect(ignoredOf(native.headers).sort()).toEqual([...expected].sort());
    },
  );

  it('sends no ignored-fields header when everything the request carried was used', async () => {
    const res = await speak(
      t,
      secrets.minimax,
      request('male-qn-qingse', { language_boost: 'auto', stream: true }, { emotion: 'calm' }),
    );
    expect(res.status).toBe(200);
    expect(res.headers.has(IGNORED)).toBe(false);
  });

  it('streams the audio as it is made (chunked) with stream:true', async () => {
    const res = await t.http
      .post('/v1/audio/speech')
      .set('Authorization', `Bearer ${secrets.espeak}`)
      .send(request('en-us', { stream: true }))
      .buffer(true)
      .parse((r, done) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => done(null, Buffer.concat(chunks)));
      });
    expect(res.status).toBe(200);
    expect(res.headers['transfer-encoding']).toBe('chunked');
    expect(res.headers['content-length']).toBeUndefined();
    expect((res.body as Buffer).length).toBeGreaterThan(1000);
    expect(res.headers[IGNORED]).toBeUndefined();
  });

  it('lets the offline engine shift pitch and names the rest as ignored', async () => {
    const res = await speak(
      t,
      secrets.espeak,
      request('en-us', { language_boost: 'English', aigc_watermark: true }, { emotion: 'sad' }),
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('x-svc-provider-used')).toBe('espeak');
    expect(ignoredOf(res.headers)).toEqual(['voice_setting.emotion', 'language_boost', 'aigc_watermark']);
  });

  it('says an emotion to OpenAI as instructions, and names pitch and the MiniMax-only fields as ignored', async () => {
    const res = await speak(
      t,
      secrets.openai,
      request('narrator', { voice_modify: { timbre: 40 } }, { emotion: 'surprised', latex_read: true }),
    );
    expect(res.status).toBe(200);
    const sent = openai.requests
      .filter((r) => r.path === '/v1/audio/speech')
      .map((r) => r.body as Record<string, unknown>);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ voice: 'alloy', instructions: 'Speak in a surprised tone.' });
    expect(sent[0]).not.toHaveProperty('voice_modify');
    expect(ignoredOf(res.headers)).toEqual(['voice_setting.pitch', 'voice_setting.latex_read', 'voice_modify']);
  });

  it('passes text_normalization to ElevenLabs as apply_text_normalization', async () => {
    const res = await speak(
      t,
      secrets.eleven,
      request('narrator', {}, { text_normalization: false, english_normalization: true }),
    );
    expect(res.status).toBe(200);
    const sent = eleven.requests.map((r) => r.body as Record<string, unknown>);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ apply_text_normalization: 'off' });
    expect(ignoredOf(res.headers)).toEqual(['voice_setting.pitch', 'voice_setting.english_normalization']);
  });

  it('accepts the fields on an async task, names what will not be used on the 202, and sends them to MiniMax with every chunk', async () => {
    const created = await t.http
      .post('/v1/audio/speech/async')
      .set('Authorization', `Bearer ${secrets.minimax}`)
      .send({
        ...request('male-qn-qingse', MINIMAX_FIELDS, VOICE_FIELDS),
        audio_setting: { format: 'wav', sample_rate: 16000 },
      });
    expect(created.status).toBe(202);
    expect(created.headers[IGNORED].split(', ')).toEqual([
      'stream',
      'stream_options',
      'output_format',
      'subtitle_enable',
      'subtitle_type',
    ]);
    const id = (created.body as { id: string }).id;
    const deadline = Date.now() + 60000;
    let status = '';
    while (Date.now() < deadline) {
      status = (
        (await t.http.get(`/v1/audio/speech/async/${id}`).set('Authorization', `Bearer ${secrets.minimax}`)).body as {
          status: string;
        }
      ).status;
      if (status === 'completed' || status === 'failed') break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(status).toBe('completed');
    const sent = minimax.requests.filter((r) => r.path === T2A).map((r) => r.body as Record<string, unknown>);
    expect(sent.length).toBeGreaterThan(0);
    for (const body of sent) {
      expect(body).toMatchObject({
        language_boost: 'English',
        timbre_weights: MINIMAX_FIELDS.timbre_weights,
        voice_modify: MINIMAX_FIELDS.voice_modify,
        voice_setting: VOICE_FIELDS,
      });
    }
  });
});
