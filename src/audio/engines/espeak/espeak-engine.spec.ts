import { encodeAudio, type AudioFormat } from '../../encoders';
import { parseFlacStreamInfo, parseWavHeader, pcmFrameCount, scanMp3Frames } from '../../parse';
import { int16ToFloat32 } from '../../pcm';
import {
  EspeakEngine,
  EspeakVoiceNotFoundError,
  espeakPitch,
  espeakRate,
  type SynthesisOptions,
} from './espeak-engine';
import { EspeakRuntime } from './espeak-runtime';

const SENTENCE = 'Hello world, this is the offline speech engine.';
const defaults: SynthesisOptions = { voice: 'en-us', speed: 1, vol: 1, pitch: 0, sampleRate: 22050, channels: 1 };

function rms(samples: Int16Array): number {
  let sum = 0;
  for (const v of samples) sum += v * v;
  return Math.sqrt(sum / samples.length) / 32768;
}

/** Median fundamental frequency of the loud 40 ms windows: the first strong autocorrelation peak (mono input). */
function medianPitch(samples: Int16Array, rate: number): number {
  const x = int16ToFloat32(samples);
  const window = Math.round(rate * 0.04);
  const pitches: number[] = [];
  for (let start = 0; start + window < x.length; start += window / 2) {
    const frame = x.subarray(start, start + window);
    const energy = frame.reduce((sum, v) => sum + v * v, 0);
    if (Math.sqrt(energy / window) < 0.05) continue;
    const correlation = (lag: number): number => {
      let c = 0;
      for (let i = 0; i + lag < window; i++) c += frame[i] * frame[i + lag];
      return c;
    };
    // the first lag that correlates nearly as well as lag 0 is one period (later peaks are its multiples)
    for (
      let lag = Math.floor(rate / 450), prev = correlation(lag - 1), here = correlation(lag);
      lag < rate / 50;
      lag++
    ) {
      const next = correlation(lag + 1);
      // normalised by the overlap, so long periods (low voices) are not penalised for fewer products
      if (here > 0.6 * energy * ((window - lag) / window) && here >= prev && here >= next) {
        pitches.push(rate / lag);
        break;
      }
      [prev, here] = [here, next];
    }
  }
  pitches.sort((a, b) => a - b);
  return pitches[Math.floor(pitches.length / 2)];
}

describe('EspeakEngine (real espeak-ng WebAssembly)', () => {
  const engine = new EspeakEngine();
  let start: jest.SpyInstance;

  beforeAll(async () => {
    start = jest.spyOn(EspeakRuntime, 'start');
    await engine.warmUp();
  }, 60_000);

  afterAll(() => start.mockRestore());

  it("lists the engine's own voices with unique ids, including American English", async () => {
    const voices = await engine.listVoices();
    expect(voices.length).toBeGreaterThan(100);
    expect(new Set(voices.map((v) => v.id)).size).toBe(voices.length);
    expect(voices.find((v) => v.id === 'en-us')).toEqual({
      id: 'en-us',
      name: 'English (America)',
      languages: ['en-us', 'en'],
    });
  });

  it('speaks a short English sentence as non-silent audio of plausible duration', async () => {
    const audio = await engine.synthesize(SENTENCE, defaults);
    const seconds = audio.samples.length / audio.sampleRate;
    expect(seconds).toBeGreaterThan(1.5);
    expect(seconds).toBeLessThan(5);
    expect(rms(audio.samples)).toBeGreaterThan(0.02);
  });

  describe.each([16000, 44100])('at %i Hz', (sampleRate) => {
    it.each([1, 2])(
      'encodes real speech with %i channel(s) into every format at exactly that rate',
      async (channels) => {
        const audio = await engine.synthesize('Testing one two three.', { ...defaults, sampleRate, channels });
        expect(audio).toMatchObject({ sampleRate, channels });
        const frames = audio.samples.length / channels;
        const seconds = frames / sampleRate;
        for (const format of ['wav', 'pcm', 'mp3', 'flac'] as const satisfies readonly AudioFormat[]) {
          const { bytes } = await encodeAudio(audio, format, 128000);
          switch (format) {
            case 'wav':
              expect(parseWavHeader(bytes)).toMatchObject({
                sampleRate,
                channels,
                bitsPerSample: 16,
                dataLength: frames * channels * 2,
              });
              break;
            case 'pcm':
              expect(bytes.length % (2 * channels)).toBe(0);
              expect(pcmFrameCount(bytes.length, channels)).toBe(frames);
              break;
            case 'mp3': {
              const stream = scanMp3Frames(bytes);
              expect(stream.first).toMatchObject({ sampleRate, channels });
              expect(stream.uniform).toBe(true);
              expect(Math.abs(stream.durationSeconds - seconds)).toBeLessThan(0.1);
              break;
            }
            case 'flac':
              expect(parseFlacStreamInfo(bytes)).toMatchObject({
                sampleRate,
                channels,
                bitsPerSample: 16,
                totalSamples: frames,
              });
              break;
          }
        }
      },
    );
  });

  it('duplicates the voice into both channels for stereo', async () => {
    const { samples } = await engine.synthesize('Stereo.', { ...defaults, channels: 2 });
    for (let i = 0; i < samples.length; i += 2)
      if (samples[i] !== samples[i + 1]) throw new Error(`channels differ at frame ${i / 2}`);
  });

  it('speaks about twice as fast at speed 2 as at speed 1', async () => {
    const text = 'The quick brown fox jumps over the lazy dog, then runs into the forest.';
    const normal = await engine.synthesize(text, defaults);
    const fast = await engine.synthesize(text, { ...defaults, speed: 2 });
    const ratio = fast.samples.length / normal.samples.length;
    expect(ratio).toBeGreaterThan(0.4);
    expect(ratio).toBeLessThan(0.6);
  });

  it('speaks higher at pitch +12 than at pitch -12', async () => {
    const text = 'Ah, mama, ah.';
    const low = await engine.synthesize(text, { ...defaults, pitch: -12 });
    const high = await engine.synthesize(text, { ...defaults, pitch: 12 });
    expect(medianPitch(high.samples, 22050) / medianPitch(low.samples, 22050)).toBeGreaterThan(1.6);
  });

  it('is louder at vol 2 and never past full scale at vol 10', async () => {
    const normal = await engine.synthesize(SENTENCE, defaults);
    const louder = await engine.synthesize(SENTENCE, { ...defaults, vol: 2 });
    const loudest = await engine.synthesize(SENTENCE, { ...defaults, vol: 10 });
    expect(rms(louder.samples) / rms(normal.samples)).toBeGreaterThan(1.6);
    expect(rms(loudest.samples)).toBeGreaterThan(rms(louder.samples));
    const peak = loudest.samples.reduce((max, v) => Math.max(max, Math.abs(v)), 0);
    expect(peak).toBeLessThanOrEqual(Math.ceil(0.97 * 32768));
  });

  it('serves overlapping requests one at a time, each as if spoken by a fresh engine (identical input, identical audio)', async () => {
    const [a, b, c] = await Promise.all([
      engine.synthesize('Same words.', defaults),
      engine.synthesize('Other words entirely.', defaults),
      engine.synthesize('Same words.', defaults),
    ]);
    expect(Buffer.from(a.samples.buffer).equals(Buffer.from(c.samples.buffer))).toBe(true);
    expect(b.samples.length).not.toBe(a.samples.length);
  });

  it('speaks text that starts with a dash instead of reading it as an option', async () => {
    const audio = await engine.synthesize('-v is not an option here.', defaults);
    expect(audio.samples.length / 22050).toBeGreaterThan(1);
  });

  it('rejects a voice the engine does not have, and keeps working afterwards', async () => {
    await expect(engine.synthesize('Hi.', { ...defaults, voice: 'xx-nowhere' })).rejects.toThrow(
      EspeakVoiceNotFoundError,
    );
    expect((await engine.synthesize('Still here.', defaults)).samples.length).toBeGreaterThan(0);
  });

  it('streams a long text piece by piece into exactly the audio synthesize returns', async () => {
    const text = Array.from({ length: 6 }, (_, i) => `This is sentence number ${i + 1}.`).join(' ');
    const small = new EspeakEngine({ pieceChars: 70 });
    const pieces: Buffer[] = [];
    for await (const part of small.stream(text, defaults))
      pieces.push(Buffer.from(part.samples.buffer, part.samples.byteOffset, part.samples.byteLength));
    expect(pieces.length).toBe(3);
    const whole = await small.synthesize(text, defaults);
    expect(Buffer.concat(pieces).equals(Buffer.from(whole.samples.buffer))).toBe(true);
  });

  it('kept one warm instance per engine for every request above', () => {
    expect(start).toHaveBeenCalledTimes(2);
  });
});

describe('espeak parameter mapping', () => {
  it('maps speed onto words per minute around 175', () => {
    expect([0.5, 1, 2].map(espeakRate)).toEqual([88, 175, 350]);
  });

  it('maps semitones onto -p around 50, saturating at 0 and 99', () => {
    expect([-12, -6, 0, 6, 12].map(espeakPitch)).toEqual([0, 18, 50, 82, 99]);
  });
});
