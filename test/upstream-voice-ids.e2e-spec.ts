import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeElevenLabs, startFakeElevenLabs } from './fakes/fake-elevenlabs';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { startApp, TestApp } from './support/app';
import { speak } from './support/speech';

const MODEL = 'speech-02-hd';
/** Well-formed ids of voices cloned in the operator's upstream accounts, never through the gateway. */
const RAW_MINIMAX = 'moss_audio_0f3b6d1c2a';
const ALLOWED_MINIMAX = 'moss_audio_allowed01';
const RAW_ELEVEN = 'Zx9RawClonedVoice01';

/**
 * A tenant cannot reach voices of the operator's upstream accounts that no consent covers: a raw custom
 * voice id is refused unless the operator allow-lists it per provider (built-in voices stay allowed).
 */
describe('raw upstream voice ids', () => {
  let t: TestApp;
  let minimax: FakeMiniMax;
  let eleven: FakeElevenLabs;
  let mmKey: string;
  let elKey: string;

  beforeAll(async () => {
    [minimax, eleven] = await Promise.all([
      startFakeMiniMax({ name: 'vi-minimax' }),
      startFakeElevenLabs({ name: 'vi-eleven' }),
    ]);
    const gateway = parseGatewayConfig(
      [
        'providers:',
        `  - { name: vi-minimax, kind: minimax, base_url: "${minimax.url}", api_key: k, allowed_voice_ids: [${ALLOWED_MINIMAX}] }`,
        `  - { name: vi-eleven, kind: elevenlabs, base_url: "${eleven.url}", api_key: k }`,
      ].join('\n'),
      'voice id test',
    );
    t = await startApp({ gateway });
    mmKey = (
      await t.createKey('raw voices mm', [
        { provider: 'vi-minimax', model: MODEL, voice_map: { narrator: RAW_MINIMAX } },
      ])
    ).secret;
    elKey = (await t.createKey('raw voices el', [{ provider: 'vi-eleven', model: 'eleven_multilingual_v2' }])).secret;
  });
  afterAll(async () => {
    await t.close();
    await Promise.all([minimax.close(), eleven.close()]);
  });
  beforeEach(() => {
    minimax.urls.length = 0;
    eleven.urls.length = 0;
  });

  const body = (voice: string, model = MODEL): object => ({
    model,
    text: 'Whose voice is this?',
    voice_setting: { voice_id: voice },
  });

  it('refuses a raw MiniMax custom voice id the operator did not allow, before any upstream call', async () => {
    const res = await speak(t, mmKey, body(RAW_MINIMAX));
    expect(res.status).toBe(400);
    expect(JSON.parse(res.bytes.toString())).toMatchObject({
      error: { code: 'voice_not_found', param: 'voice_setting.voice_id' },
    });
    expect(minimax.urls).toEqual([]);
  });

  it('serves a built-in voice, an allow-listed raw id, and a raw id the operator mapped in voice_map', async () => {
    for (const voice of ['male-qn-qingse', ALLOWED_MINIMAX, 'narrator']) {
      const res = await speak(t, mmKey, body(voice));
      expect(res.status).toBe(200);
      expect(res.bytes.length).toBeGreaterThan(0);
    }
    expect(minimax.urls.length).toBe(3);
  });

  it('refuses a raw ElevenLabs voice id and serves a premade one', async () => {
    const refused = await speak(t, elKey, body(RAW_ELEVEN, 'eleven_multilingual_v2'));
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.bytes.toString())).toMatchObject({ error: { code: 'voice_not_found' } });
    expect(eleven.urls).toEqual([]);
    const served = await speak(t, elKey, body('21m00Tcm4TlvDq8ikWAM', 'eleven_multilingual_v2'));
    expect(served.status).toBe(200);
  });
});
