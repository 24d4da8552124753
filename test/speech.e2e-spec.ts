import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { AudioFormat } from '../src/audio/encoders';

/** The formats this file covers (the newer ones: test/speech-formats.e2e-spec.ts). */
type ClassicFormat = Extract<AudioFormat, 'mp3' | 'wav' | 'pcm' | 'flac'>;
import { parseFirstMp3Frame } from '../src/audio/parse';
import { audioFacts } from './fakes/speech-audio';
import { TestApp } from './support/app';
import { eventually, REQUEST_ID, sleep } from './support/failover';
import { rms, speak, SPEECH_PATH } from './support/speech';
import { startSyncSpeechApp, SYNC_SPEECH_MODEL as MODEL } from './support/speech-sync-app';

// The audio synchronous speech makes; what it refuses and the voices it lists: speech-validation.e2e-spec.ts.

// every synthesis below is real work for the offline engine
jest.setTimeout(120000);

const SENTENCE = 'Hello from the offline engine.';

describe('synchronous speech with the offline engine', () => {
  let t: TestApp, secret: string, close: () => Promise<void>;
  beforeAll(async () => ({ t, secret, close } = await startSyncSpeechApp()));
  afterAll(() => close());

  const CONTENT_TYPES: Record<ClassicFormat, (rate: number, channels: number) => string> = {
    mp3: () => 'audio/mpeg',
    wav: () => 'audio/wav',
    flac: () => 'audio/flac',
    pcm: (rate, channels) => `audio/L16;rate=${rate};channels=${channels}`,
  };
  // two rates per format, all six allowed rates over the table; MPEG-2.5, -2 and -1 for mp3
  const RATES: Record<ClassicFormat, [number, number]> = {
    mp3: [8000, 44100],
    wav: [16000, 32000],
    pcm: [22050, 24000],
    flac: [16000, 44100],
  };
  const CASES = (Object.keys(RATES) as ClassicFormat[]).flatMap((format) =>
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
});
