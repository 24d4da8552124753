import { parseGatewayConfig } from '../src/config/gateway-config';
import { startApp, TestApp } from './support/app';
import { speak } from './support/speech';
import { MODEL, request } from './support/speech-fields';

jest.setTimeout(120000);

/**
 * MiniMax's optional request fields (decisions §7) out of their range or definition: refused with 400 naming the
 * field, on the sync and async routes. What is accepted, forwarded and used: speech-fields.e2e-spec.ts.
 */
describe("MiniMax's optional speech fields: refused", () => {
  let t: TestApp;
  const secrets: Record<string, string> = {};

  beforeAll(async () => {
    t = await startApp({
      gateway: parseGatewayConfig('providers:\n  - { name: espeak, kind: espeak }\n', 'speech fields test (refused)'),
    });
    secrets.espeak = (await t.createKey('sf espeak', [{ provider: 'espeak', model: MODEL }])).secret;
  });
  afterAll(() => t.close());

  it.each([
    [
      'an emotion MiniMax does not define',
      request('en-us', {}, { emotion: 'ecstatic' }),
      'invalid_value',
      'voice_setting.emotion',
    ],
    [
      'voice_modify.pitch past 100',
      request('en-us', { voice_modify: { pitch: 101 } }),
      'invalid_value',
      'voice_modify.pitch',
    ],
    [
      'a fractional voice_modify.intensity',
      request('en-us', { voice_modify: { intensity: 1.5 } }),
      'invalid_value',
      'voice_modify.intensity',
    ],
    [
      'an unknown sound effect',
      request('en-us', { voice_modify: { sound_effects: 'cathedral' } }),
      'invalid_value',
      'voice_modify.sound_effects',
    ],
    [
      'five timbre weights',
      request('en-us', {
        timbre_weights: Array.from({ length: 5 }, () => ({ voice_id: 'female-shaonv', weight: 20 })),
      }),
      'invalid_value',
      'timbre_weights',
    ],
    [
      'a timbre weight of 0',
      request('en-us', { timbre_weights: [{ voice_id: 'female-shaonv', weight: 0 }] }),
      'invalid_value',
      'timbre_weights[0].weight',
    ],
    [
      'a language MiniMax does not boost',
      request('en-us', { language_boost: 'Klingon' }),
      'invalid_value',
      'language_boost',
    ],
    [
      'output_format other than hex or url',
      request('en-us', { output_format: 'base64' }),
      'invalid_value',
      'output_format',
    ],
    ['a string for stream', request('en-us', { stream: 'yes' }), 'invalid_value', 'stream'],
    [
      'a subtitle type MiniMax does not define',
      request('en-us', { subtitle_type: 'paragraph' }),
      'invalid_value',
      'subtitle_type',
    ],
    [
      'a non-string pronunciation',
      request('en-us', { pronunciation_dict: { tone: [7] } }),
      'invalid_value',
      'pronunciation_dict.tone',
    ],
    ['a field MiniMax does not define', request('en-us', { mood: 'good' }), 'unknown_field', 'mood'],
    [
      'a voice_setting field MiniMax does not define',
      request('en-us', {}, { mood: 'good' }),
      'unknown_field',
      'voice_setting.mood',
    ],
    [
      'a voice_modify field MiniMax does not define',
      request('en-us', { voice_modify: { reverb: 3 } }),
      'unknown_field',
      'voice_modify.reverb',
    ],
    [
      'a stream_options field MiniMax does not define',
      request('en-us', { stream_options: { include_usage: true } }),
      'unknown_field',
      'stream_options.include_usage',
    ],
  ])('refuses %s with 400 naming the field', async (_, body, code, param) => {
    const res = await speak(t, secrets.espeak, body);
    expect(res.status).toBe(400);
    const error = (JSON.parse(res.bytes.toString('utf8')) as { error: { code: string; param: string } }).error;
    expect(error).toMatchObject({ code, param });
  });

  it('refuses an out-of-range field on an async task before anything is stored', async () => {
    const res = await t.http
      .post('/v1/audio/speech/async')
      .set('Authorization', `Bearer ${secrets.espeak}`)
      .send(request('en-us', { voice_modify: { timbre: -101 } }));
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_value', param: 'voice_modify.timbre' });
  });
});
