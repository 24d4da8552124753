import { createHash } from 'node:crypto';
import { decodeFlac as decodeTestFlac } from '../../test/support/flac';
import { contentTypeFor, createStreamingEncoder, encodeAudio, mp3Bitrate, type AudioFormat } from './encoders';
import { parseFirstMp3Frame, parseFlacStreamInfo, parseWavHeader, pcmFrameCount, scanMp3Frames } from './parse';
import { encodePcm16le, float32ToInt16, toChannels } from './pcm';

function tone(rate: number, channels: number, seconds: number): Int16Array {
  const mono = new Float32Array(Math.round(rate * seconds));
  for (let i = 0; i < mono.length; i++)
    mono[i] = 0.4 * Math.sin((2 * Math.PI * 440 * i) / rate) + 0.1 * Math.sin((2 * Math.PI * 1250 * i) / rate);
  return toChannels(float32ToInt16(mono), channels);
}

/** libFLAC's decoder, to prove the FLAC bytes decode back to the very same samples. */
async function decodeFlac(bytes: Buffer, channels: number): Promise<Int16Array> {
  const { samples, errors } = await decodeTestFlac(bytes, channels);
  expect(errors).toEqual([]);
  return samples;
}

const FORMATS = ['wav', 'pcm', 'mp3', 'flac'] as const satisfies readonly AudioFormat[];

describe('encodeAudio', () => {
  describe.each([16000, 44100])('at %i Hz', (sampleRate) => {
    it.each(FORMATS.flatMap((format) => [1, 2].map((channels) => [format, channels] as const)))(
      'writes %s whose header says exactly the requested rate and %i channel(s)',
      async (format, channels) => {
        const samples = tone(sampleRate, channels, 0.5);
        const { bytes, contentType } = await encodeAudio({ samples, sampleRate, channels }, format, 128000);
        expect(contentType).toBe(contentTypeFor(format, sampleRate, channels));
        switch (format) {
          case 'wav': {
            const info = parseWavHeader(bytes);
            expect(info).toMatchObject({
              formatTag: 1,
              sampleRate,
              channels,
              bitsPerSample: 16,
              dataLength: samples.length * 2,
            });
            expect(bytes.subarray(info.dataOffset).equals(encodePcm16le(samples))).toBe(true);
            break;
          }
          case 'pcm':
            expect(contentType).toBe(`audio/L16;rate=${sampleRate};channels=${channels}`);
            expect(pcmFrameCount(bytes.length, channels)).toBe(sampleRate * 0.5);
            break;
          case 'mp3': {
            const stream = scanMp3Frames(bytes);
            expect(stream.first).toMatchObject({ sampleRate, channels, layer: 3, bitrate: 128000 });
            expect(stream.uniform).toBe(true);
            expect(stream.trailingBytes).toBe(0);
            // encoder delay and the last partial frame add at most a few frames
            expect(stream.durationSeconds).toBeGreaterThanOrEqual(0.5);
            expect(stream.durationSeconds).toBeLessThan(0.5 + (3 * stream.first.samples) / sampleRate);
            break;
          }
          case 'flac': {
            const info = parseFlacStreamInfo(bytes);
            expect(info).toMatchObject({ sampleRate, channels, bitsPerSample: 16, totalSamples: sampleRate * 0.5 });
            break;
          }
        }
      },
    );
  });

  it('writes FLAC that decodes back to exactly the input, with its MD5 and frame sizes filled in', async () => {
    const samples = tone(22050, 2, 1);
    const { bytes } = await encodeAudio({ samples, sampleRate: 22050, channels: 2 }, 'flac', 128000);
    const info = parseFlacStreamInfo(bytes);
    expect(info.md5).toBe(createHash('md5').update(encodePcm16le(samples)).digest('hex'));
    expect(info.minFrameSize).toBeGreaterThan(0);
    expect(info.maxFrameSize).toBeGreaterThanOrEqual(info.minFrameSize);
    expect(encodePcm16le(await decodeFlac(bytes, 2)).equals(encodePcm16le(samples))).toBe(true);
    expect(bytes.length).toBeLessThan(samples.length * 2);
  });

  it('refuses samples that are not whole frames for the channel count', async () => {
    await expect(
      encodeAudio({ samples: new Int16Array(3), sampleRate: 16000, channels: 2 }, 'wav', 128000),
    ).rejects.toThrow(RangeError);
  });
});

describe('MP3 bitrate', () => {
  const rates = [8000, 16000, 22050, 24000, 32000, 44100];
  const cases = rates.flatMap((rate) =>
    [1, 2].flatMap((channels) => [32000, 64000, 128000, 256000].map((bitrate) => [rate, channels, bitrate] as const)),
  );

  it.each(cases)(
    'keeps %i Hz with %i channel(s) when asked for %i bps, and reports the bitrate really used',
    async (sampleRate, channels, bitrate) => {
      const { bytes, bitrate: used } = await encodeAudio(
        { samples: tone(sampleRate, channels, 0.05), sampleRate, channels },
        'mp3',
        bitrate,
      );
      const frame = parseFirstMp3Frame(bytes);
      expect(frame).toMatchObject({ sampleRate, channels, bitrate: used });
      expect(used).toBe(mp3Bitrate(sampleRate, channels, bitrate));
    },
  );

  it('caps MPEG-2/2.5 rates at what they can carry and raises bitrates too low to keep the rate', () => {
    expect(mp3Bitrate(16000, 1, 256000)).toBe(160000);
    expect(mp3Bitrate(8000, 2, 128000)).toBe(64000);
    expect(mp3Bitrate(44100, 2, 32000)).toBe(112000);
    expect(mp3Bitrate(44100, 1, 128000)).toBe(128000);
    expect(mp3Bitrate(32000, 2, 256000)).toBe(256000);
    expect(() => mp3Bitrate(48000, 1, 128000)).toThrow(RangeError);
  });
});

describe('createStreamingEncoder', () => {
  const sampleRate = 24000;
  const samples = tone(sampleRate, 2, 1);
  const chunks = Array.from({ length: 10 }, (_, i) => samples.subarray(i * 4800, (i + 1) * 4800));

  it('streams PCM chunk by chunk into the same bytes as the whole file', async () => {
    const encoder = await createStreamingEncoder('pcm', { sampleRate, channels: 2, bitrate: 128000 });
    const streamed = Buffer.concat([...chunks.map((chunk) => encoder.push(chunk)), encoder.end()]);
    expect(streamed.equals(encodePcm16le(samples))).toBe(true);
    expect(encoder.contentType).toBe('audio/L16;rate=24000;channels=2');
  });

  it('streams MP3 as whole frames before the end, concatenating to one valid stream', async () => {
    const encoder = await createStreamingEncoder('mp3', { sampleRate, channels: 2, bitrate: 64000 });
    const parts = chunks.map((chunk) => encoder.push(chunk));
    parts.push(encoder.end());
    expect(parts[1].length).toBeGreaterThan(0);
    const stream = scanMp3Frames(Buffer.concat(parts));
    expect(stream.first).toMatchObject({ sampleRate, channels: 2, bitrate: 64000 });
    expect(stream.uniform && stream.trailingBytes === 0).toBe(true);
    expect(stream.durationSeconds).toBeGreaterThanOrEqual(1);
    expect(encoder.bitrate).toBe(64000);
  });

  it('streams FLAC whose header arrives first and whose length is marked unknown', async () => {
    const encoder = await createStreamingEncoder('flac', { sampleRate, channels: 2, bitrate: 128000 });
    const parts = chunks.map((chunk) => encoder.push(chunk));
    parts.push(encoder.end());
    expect(parts[0].toString('latin1', 0, 4)).toBe('fLaC');
    const bytes = Buffer.concat(parts);
    expect(parseFlacStreamInfo(bytes)).toMatchObject({ sampleRate, channels: 2, totalSamples: 0 });
    expect(encodePcm16le(await decodeFlac(bytes, 2)).equals(encodePcm16le(samples))).toBe(true);
  });
});
