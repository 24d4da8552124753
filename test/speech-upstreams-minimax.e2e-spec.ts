import { parseGatewayConfig } from '../src/config/gateway-config';
import { parseFirstMp3Frame } from '../src/audio/parse';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { audioFacts } from './fakes/speech-audio';
import { startApp, TestApp } from './support/app';
import { failoverHeaders, speak } from './support/speech';

jest.setTimeout(120000);

const MODEL = 'speech-02-hd';
const TEXT = 'Speech through the upstream fakes.';
const T2A = '/v1/t2a_v2';

/**
 * Synchronous speech with MiniMax as the entry step, against a real HTTP fake. OpenAI, ElevenLabs and failover from a
 * failing MiniMax: speech-upstreams.e2e-spec.ts. Provider names are unique to this file: circuits are shared by every
 * test file of the run.
 */
describe('synchronous speech through upstream providers: MiniMax as the entry step', () => {
  let t: TestApp;
  let minimax: FakeMiniMax;

  beforeAll(async () => {
    minimax = await startFakeMiniMax({ name: 'su-minimax' });
    const gateway = parseGatewayConfig(
      `providers:\n  - { name: su-minimax, kind: minimax, base_url: "${minimax.url}", api_key: k }\n`,
      'upstream speech test (MiniMax)',
    );
    t = await startApp({ gateway });
  });
  afterAll(async () => {
    await t.close();
    await minimax.close();
  });
  beforeEach(() => {
    minimax.reset();
    minimax.urls.length = 0;
  });

  let secret: string;
  beforeAll(async () => {
    secret = (
      await t.createKey('minimax', [
        { provider: 'su-minimax', model: MODEL, voice_map: { narrator: 'English_Graceful_Lady' } },
      ])
    ).secret;
  });

  it.each([
    ['mp3', 44100, 2, 'audio/mpeg', true],
    ['pcm', 16000, 1, 'audio/L16;rate=16000;channels=1', true],
    ['flac', 22050, 2, 'audio/flac', true],
    // MiniMax makes WAV only whole: asked without streaming, answered as one hex clip
    ['wav', 24000, 1, 'audio/wav', false],
  ] as const)(
    'relays %s at %i Hz, %i channel(s), asking MiniMax for exactly that (streamed: %s)',
    async (format, rate, channels, contentType, streamed) => {
      const res = await speak(t, secret, {
        model: MODEL,
        text: TEXT,
        voice_setting: { voice_id: 'narrator', speed: 1.5, vol: 2, pitch: -3 },
        audio_setting: { format, sample_rate: rate, channel: channels, bitrate: 64000 },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(contentType);
      expect(failoverHeaders(res.headers)).toEqual({
        provider: 'su-minimax',
        isFallback: 'false',
        level: '0',
        alert: null,
      });
      expect(audioFacts(res.bytes, format, contentType)).toMatchObject({ sampleRate: rate, channels });
      if (format === 'mp3')
        expect(res.headers.get('x-svc-audio-bitrate')).toBe(String(parseFirstMp3Frame(res.bytes).bitrate));

      expect(minimax.requests).toHaveLength(1);
      const sent = minimax.requests[0];
      expect(sent.path).toBe(T2A);
      expect(sent.headers.authorization).toBe('Bearer k');
      expect(sent.body).toMatchObject({
        model: MODEL,
        text: TEXT,
        stream: streamed,
        voice_setting: { voice_id: 'English_Graceful_Lady', speed: 1.5, vol: 2, pitch: -3 },
        audio_setting: { format, sample_rate: rate, channel: channels, bitrate: 64000 },
      });
      if (streamed) expect(sent.body).toMatchObject({ stream_options: { exclude_aggregated_audio: true } });
    },
  );

  it('passes a MiniMax system voice through unmapped', async () => {
    const res = await speak(t, secret, {
      model: MODEL,
      text: TEXT,
      voice_setting: { voice_id: 'female-shaonv' },
      audio_setting: { format: 'pcm', sample_rate: 8000 },
    });
    expect(res.status).toBe(200);
    expect(minimax.requests[0].body).toMatchObject({ voice_setting: { voice_id: 'female-shaonv' } });
  });
});
