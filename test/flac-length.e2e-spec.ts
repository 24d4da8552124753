import { parseFlacStreamInfo } from '../src/audio/parse';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { startApp, TestApp } from './support/app';

jest.setTimeout(120000);

const MODEL = 'speech-02-hd';

/** A FLAC answer made whole says its length in STREAMINFO; a streamed one says 0, "unknown" (issue 41). */
describe('the length in a FLAC header', () => {
  let t: TestApp;
  let secret: string;

  beforeAll(async () => {
    const gateway = parseGatewayConfig(['providers:', '  - { name: espeak, kind: espeak }'].join('\n'), 'flac test');
    t = await startApp({ gateway });
    secret = (await t.createKey('flac', [{ provider: 'espeak', model: MODEL }])).secret;
  });
  afterAll(() => t.close());

  const body = {
    model: MODEL,
    text: 'Five words of English speech.',
    voice_setting: { voice_id: 'en-us' },
    audio_setting: { format: 'flac', sample_rate: 16000 },
  };

  it('gives the total samples of a whole /v1/t2a_v2 answer (hex), matching its extra_info duration', async () => {
    const res = await t.http.post('/v1/t2a_v2').set('Authorization', `Bearer ${secret}`).send(body);
    const answer = res.body as { data: { audio: string }; extra_info: { audio_length: number } };

    const info = parseFlacStreamInfo(Buffer.from(answer.data.audio, 'hex'));
    expect(info).toMatchObject({ sampleRate: 16000, channels: 1 });
    expect(info.totalSamples).toBeGreaterThan(16000 * 0.5);
    expect(answer.extra_info.audio_length).toBe(Math.round((info.totalSamples / 16000) * 1000));
  });

  it('says 0 (unknown) in a streamed /v1/audio/speech answer, whose header went out first', async () => {
    const res = await fetch(`${t.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    expect(parseFlacStreamInfo(Buffer.from(await res.arrayBuffer())).totalSamples).toBe(0);
  });
});
