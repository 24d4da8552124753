import { parseGatewayConfig } from '../src/config/gateway-config';
import type { AudioFormat } from '../src/audio/encoders';
import type { ChainStepDto } from '../src/config/chain-step.dto';
import { parseFirstMp3Frame } from '../src/audio/parse';
import { FakeElevenLabs, startFakeElevenLabs } from './fakes/fake-elevenlabs';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { audioFacts, TONE_HZ } from './fakes/speech-audio';
import { startApp, TestApp } from './support/app';
import { REQUEST_ID, servedAlert } from './support/failover';
import { failoverHeaders, speak, SPEECH_PATH } from './support/speech';

jest.setTimeout(120000);

const MODEL = 'speech-02-hd';
const OPENAI_MODEL = 'gpt-4o-mini-tts';
const ELEVEN_MODEL = 'eleven_multilingual_v2';
const TEXT = 'Speech through the upstream fakes.';
const T2A = '/v1/t2a_v2';
/** The fakes answer with a 440 Hz tone: found again in the output, it proves the resampling kept the pitch. */
const pitchOf = (bytes: Buffer, format: AudioFormat, contentType: string): number | null =>
  audioFacts(bytes, format, contentType).frequency;

/**
 * Synchronous speech served by the upstream speech adapters against real HTTP fakes: OpenAI and ElevenLabs as chain
 * steps (with voice_map), and failover from a failing MiniMax with the x-svc-* headers. MiniMax as the entry step:
 * speech-upstreams-minimax.e2e-spec.ts.
 * Provider names are unique to this file: circuits are shared by every test file of the run.
 */
describe('synchronous speech through upstream providers', () => {
  let t: TestApp;
  let failing: FakeMiniMax;
  let openai: FakeOpenAi;
  let eleven: FakeElevenLabs;

  beforeAll(async () => {
    [failing, openai, eleven] = await Promise.all([
      startFakeMiniMax({ name: 'su-minimax-failing' }),
      startFakeOpenAi({ name: 'su-openai' }),
      startFakeElevenLabs({ name: 'su-eleven' }),
    ]);
    const provider = (name: string, kind: string, url: string): string =>
      `  - { name: ${name}, kind: ${kind}, base_url: "${url}", api_key: k }`;
    const gateway = parseGatewayConfig(
      [
        'providers:',
        '  - { name: espeak, kind: espeak }',
        // one failing upstream, one provider name (and so one circuit) per way of failing
        provider('su-mm-http', 'minimax', failing.url),
        provider('su-mm-base', 'minimax', failing.url),
        provider('su-mm-event', 'minimax', failing.url),
        provider('su-mm-mid', 'minimax', failing.url),
        provider('su-mm-chain', 'minimax', failing.url),
        provider('su-mm-refuse', 'minimax', failing.url),
        provider('su-openai', 'openai', openai.url),
        provider('su-eleven', 'elevenlabs', eleven.url),
      ].join('\n'),
      'upstream speech test',
    );
    t = await startApp({ gateway });
  });
  afterAll(async () => {
    await t.close();
    await Promise.all([failing.close(), openai.close(), eleven.close()]);
  });
  beforeEach(() => {
    for (const fake of [failing, openai, eleven]) fake.reset();
    for (const log of [failing.urls, eleven.urls]) log.length = 0;
    failing.errorAsEvent = false;
  });

  describe('failover from a failing MiniMax to the next speech step', () => {
    const chain = (provider: string): ChainStepDto[] => [
      { provider, model: MODEL, voice_map: { '*': 'male-qn-qingse' } },
      { provider: 'espeak', model: MODEL, voice_map: { '*': 'en-us' } },
    ];
    const LOGIN_FAIL = 'provider error 1004: login fail: Please carry the API secret key in the Authorization field';

    it.each([
      ['an HTTP 500', 'su-mm-http', 'http500', false, 'HTTP 500'],
      ['HTTP 200 with base_resp.status_code 1004 (a JSON body)', 'su-mm-base', 'baseRespError', false, LOGIN_FAIL],
      [
        'HTTP 200 with base_resp.status_code 1004 (an SSE error event)',
        'su-mm-event',
        'baseRespError',
        true,
        LOGIN_FAIL,
      ],
    ] as const)('fails over on %s and says so in the headers', async (_, provider, mode, asEvent, reason) => {
      failing.setMode(mode);
      failing.errorAsEvent = asEvent;
      const key = await t.createKey(`failover ${provider}`, chain(provider));
      const res = await speak(t, key.secret, {
        model: MODEL,
        text: TEXT,
        voice_setting: { voice_id: 'narrator' },
        audio_setting: { format: 'wav', sample_rate: 16000, channel: 2 },
      });
      expect(res.status).toBe(200);
      expect(failoverHeaders(res.headers)).toEqual({
        provider: 'espeak',
        isFallback: 'true',
        level: '1',
        alert: servedAlert(provider, reason, 'espeak', 1),
      });
      expect(res.headers.get('x-svc-request-id')).toMatch(REQUEST_ID);
      // the fallback's real speech, in the requested shape
      expect(audioFacts(res.bytes, 'wav', 'audio/wav')).toMatchObject({ sampleRate: 16000, channels: 2 });
      // an HTTP 500 is tried once more on its step (decisions §3); a base_resp error is not
      expect(failing.count(T2A)).toBe(mode === 'http500' ? 2 : 1);
      expect(failing.requests[0].body).toMatchObject({ voice_setting: { voice_id: 'male-qn-qingse' } });
    });

    it("fails over on MiniMax's refusal of the text (base_resp 1026) without holding it against its circuit", async () => {
      failing.setMode('baseRespError', { status: 1026, message: 'input new_sensitive' });
      const key = await t.createKey('failover su-mm-refuse', chain('su-mm-refuse'));
      // more refusals in a row than the breaker's threshold (5): a tenant's text must not take MiniMax out for everyone
      for (let i = 0; i < 7; i++) {
        const res = await speak(t, key.secret, { model: MODEL, text: TEXT, voice_setting: { voice_id: 'narrator' } });
        expect(res.status).toBe(200);
        expect(failoverHeaders(res.headers)).toMatchObject({ provider: 'espeak', level: '1' });
      }
      expect(failing.count(T2A)).toBe(7);
      const health = await t.http.get('/v1/providers/health').set('Authorization', `Bearer ${key.secret}`);
      const providers = (health.body as { providers: Array<{ provider: string }> }).providers;
      expect(providers.find((p) => p.provider === 'su-mm-refuse')).toMatchObject({
        status: 'healthy',
        consecutive_failures: 0,
      });
    });

    it('walks two failing steps and reports the last one as exhausted, at level 2', async () => {
      failing.setMode('http500');
      eleven.setMode('http500', { status: 503 });
      const key = await t.createKey('two failures', [
        { provider: 'su-mm-chain', model: MODEL, voice_map: { '*': 'male-qn-qingse' } },
        { provider: 'su-eleven', model: ELEVEN_MODEL, voice_map: { '*': '21m00Tcm4TlvDq8ikWAM' } },
        { provider: 'su-openai', model: OPENAI_MODEL, voice_map: { '*': 'alloy' } },
      ]);
      try {
        const res = await speak(t, key.secret, {
          model: MODEL,
          text: TEXT,
          voice_setting: { voice_id: 'narrator' },
          audio_setting: { format: 'pcm', sample_rate: 24000 },
        });
        expect(res.status).toBe(200);
        expect(failoverHeaders(res.headers)).toEqual({
          provider: 'su-openai',
          isFallback: 'true',
          level: '2',
          alert: servedAlert('su-eleven', 'HTTP 503', 'su-openai', 2),
        });
        // each 5xx step is tried twice (decisions §3)
        expect([failing.count(T2A), eleven.count(), openai.count('/v1/audio/speech')]).toEqual([2, 2, 1]);
        // each fallback sent its own model and its own voice
        expect(openai.requests[0].body).toMatchObject({ model: OPENAI_MODEL, voice: 'alloy', input: TEXT });
      } finally {
        eleven.setMode('ok');
      }
    });

    // with a later step the rest is spoken there (test/speech-stream-continuation.e2e-spec.ts)
    it('cuts the body instead of truncating it silently when MiniMax fails after the first audio and no later step can speak', async () => {
      failing.setMode('midStreamBaseRespError');
      const key = await t.createKey('mid-stream', chain('su-mm-mid').slice(0, 1));
      const res = await fetch(`${t.url}${SPEECH_PATH}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: MODEL,
          text: TEXT,
          voice_setting: { voice_id: 'narrator' },
          audio_setting: { format: 'pcm', sample_rate: 16000 },
        }),
      });
      // the first audio fixed the provider: headers name it, and no failover happens after that
      expect(res.status).toBe(200);
      expect(failoverHeaders(res.headers)).toEqual({
        provider: 'su-mm-mid',
        isFallback: 'false',
        level: '0',
        alert: null,
      });
      // the first audio arrives, then the body breaks off: a client sees an error, never a short clip that looks whole
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      let received = 0;
      const readAll = async (): Promise<void> => {
        for (let part = await reader.read(); !part.done; part = await reader.read()) received += part.value.length;
      };
      await expect(readAll()).rejects.toThrow();
      expect(received).toBeGreaterThan(0);
      expect(failing.count(T2A)).toBe(1);
    });
  });

  describe('OpenAI and ElevenLabs as speech steps', () => {
    it('speaks through OpenAI with the mapped voice, transcoding its 24 kHz pcm into the requested format and rate', async () => {
      const key = await t.createKey('openai', [
        { provider: 'su-openai', model: OPENAI_MODEL, voice_map: { narrator: 'nova', '*': 'alloy' } },
      ]);
      const res = await speak(t, key.secret, {
        model: OPENAI_MODEL,
        text: TEXT,
        voice_setting: { voice_id: 'narrator', speed: 1.25 },
        audio_setting: { format: 'wav', sample_rate: 16000, channel: 2 },
      });
      expect(res.status).toBe(200);
      expect(failoverHeaders(res.headers)).toEqual({
        provider: 'su-openai',
        isFallback: 'false',
        level: '0',
        alert: null,
      });
      expect(res.headers.get('content-type')).toBe('audio/wav');
      expect(audioFacts(res.bytes, 'wav', 'audio/wav')).toMatchObject({ sampleRate: 16000, channels: 2 });
      expect(pitchOf(res.bytes, 'wav', 'audio/wav')).toBeCloseTo(TONE_HZ, -1);
      expect(openai.requests).toHaveLength(1);
      expect(openai.requests[0]).toMatchObject({
        path: '/v1/audio/speech',
        body: { model: OPENAI_MODEL, input: TEXT, voice: 'nova', response_format: 'pcm', speed: 1.25 },
      });

      const other = await speak(t, key.secret, {
        model: OPENAI_MODEL,
        text: TEXT,
        voice_setting: { voice_id: 'someone' },
        audio_setting: { format: 'mp3', sample_rate: 22050 },
      });
      expect(other.status).toBe(200);
      expect(parseFirstMp3Frame(other.bytes)).toMatchObject({ sampleRate: 22050, channels: 1 });
      expect(openai.requests[1].body).toMatchObject({ voice: 'alloy' });
    });

    it.each([
      // ElevenLabs streams pcm_<rate>: the nearest rate at or above the requested one, resampled here
      ['pcm', 8000, 1, 'pcm_16000'],
      ['mp3', 44100, 2, 'pcm_44100'],
      ['flac', 32000, 1, 'pcm_44100'],
    ] as const)(
      'speaks through ElevenLabs as %s at %i Hz, %i channel(s), from its %s stream',
      async (format, rate, channels, outputFormat) => {
        const key = await t.createKey('eleven', [
          {
            provider: 'su-eleven',
            model: ELEVEN_MODEL,
            voice_map: { narrator: 'JBFqnCBsd6RMkjVDRZzb', '*': '21m00Tcm4TlvDq8ikWAM' },
          },
        ]);
        const res = await speak(t, key.secret, {
          model: ELEVEN_MODEL,
          text: TEXT,
          voice_setting: { voice_id: 'narrator' },
          audio_setting: { format, sample_rate: rate, channel: channels },
        });
        expect(res.status).toBe(200);
        expect(failoverHeaders(res.headers)).toEqual({
          provider: 'su-eleven',
          isFallback: 'false',
          level: '0',
          alert: null,
        });
        const contentType = res.headers.get('content-type') ?? '';
        expect(audioFacts(res.bytes, format, contentType)).toMatchObject({ sampleRate: rate, channels });
        if (format === 'pcm') expect(pitchOf(res.bytes, format, contentType)).toBeCloseTo(TONE_HZ, -1);
        expect(eleven.urls).toEqual([`/v1/text-to-speech/JBFqnCBsd6RMkjVDRZzb/stream?output_format=${outputFormat}`]);
        expect(eleven.requests[0].body).toMatchObject({ text: TEXT, model_id: ELEVEN_MODEL });
        expect(eleven.requests[0].headers['xi-api-key']).toBe('k');
      },
    );

    it('fails over from MiniMax to ElevenLabs with the fallback step voice_map default', async () => {
      failing.setMode('baseRespError');
      const key = await t.createKey('to eleven', [
        { provider: 'su-mm-base', model: MODEL },
        { provider: 'su-eleven', model: ELEVEN_MODEL, voice_map: { '*': 'EXAVITQu4vr4xnSDxMaL' } },
      ]);
      const res = await speak(t, key.secret, {
        model: MODEL,
        text: TEXT,
        voice_setting: { voice_id: 'male-qn-qingse' },
        audio_setting: { format: 'pcm', sample_rate: 22050 },
      });
      expect(res.status).toBe(200);
      expect(failoverHeaders(res.headers)).toMatchObject({ provider: 'su-eleven', isFallback: 'true', level: '1' });
      // the entry step got the requested MiniMax voice; the fallback spoke with its own
      expect(failing.requests[0].body).toMatchObject({ voice_setting: { voice_id: 'male-qn-qingse' } });
      expect(eleven.urls).toEqual(['/v1/text-to-speech/EXAVITQu4vr4xnSDxMaL/stream?output_format=pcm_22050']);
    });
  });
});
