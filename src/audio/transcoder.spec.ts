import { Readable } from 'node:stream';
import { liveFlacEncoders } from './flac';
import { parseFlacStreamInfo, parseWavHeader, scanMp3Frames } from './parse';
import { applyVolume, decodePcm16le, encodePcm16le, float32ToInt16, int16ToFloat32, resample, toChannels } from './pcm';
import { createTranscoder, outputShape, transcodeStream, type TranscodeOutput } from './transcoder';

/** A 440 Hz + 1250 Hz mix with a little noise, so every filter tap matters. */
function signal(rate: number, seconds: number, level = 0.4): Int16Array {
  const out = new Float32Array(Math.round(rate * seconds));
  let seed = 7;
  for (let i = 0; i < out.length; i++) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    out[i] =
      level * Math.sin((2 * Math.PI * 440 * i) / rate) +
      0.1 * Math.sin((2 * Math.PI * 1250 * i) / rate) +
      0.02 * (seed / 2147483648 - 0.5);
  }
  return float32ToInt16(out);
}

/** Cuts `samples` into pieces of varying size (whole frames), as an upstream's chunks would arrive. */
function pieces(samples: Int16Array, channels: number, sizes = [1, 7, 300, 41, 4096, 2, 999]): Int16Array[] {
  const out: Int16Array[] = [];
  for (let at = 0, i = 0; at < samples.length; i++) {
    const take = sizes[i % sizes.length] * channels;
    out.push(samples.subarray(at, at + take));
    at += take;
  }
  return out;
}

async function streamed(
  pcm: Int16Array,
  from: { rate: number; channels: number },
  output: TranscodeOutput,
  gain?: number,
): Promise<{ bytes: Buffer; early: number }> {
  const transcoder = await createTranscoder({ fromRate: from.rate, fromChannels: from.channels, output, gain });
  const parts = pieces(pcm, from.channels).map((piece) => transcoder.push(piece));
  const early = parts.reduce((sum, part) => sum + part.length, 0);
  return { bytes: Buffer.concat([...parts, transcoder.end()]), early };
}

const pcmOut = (sampleRate: number, channels = 1): TranscodeOutput => ({
  format: 'pcm',
  sampleRate,
  channels,
  bitrate: 128000,
});

function maxDifference(a: Int16Array, b: Int16Array): number {
  expect(a.length).toBe(b.length);
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i] - b[i]));
  return max;
}

describe('createTranscoder', () => {
  it.each([
    [24000, 16000],
    [24000, 44100],
    [44100, 32000],
    [22050, 8000],
    [16000, 22050],
  ])('resamples a chunked stream %i → %i Hz exactly as resampling the whole clip at once', async (fromRate, toRate) => {
    const input = signal(fromRate, 0.7);
    const { bytes, early } = await streamed(input, { rate: fromRate, channels: 1 }, pcmOut(toRate));
    const whole = float32ToInt16(resample(int16ToFloat32(input), fromRate, toRate));
    expect(maxDifference(decodePcm16le(bytes), whole)).toBeLessThanOrEqual(1);
    // most of the audio left before end(): the stream really streams
    expect(early).toBeGreaterThan(bytes.length * 0.9);
  });

  it('mixes stereo down to the mean of both channels', async () => {
    const left = signal(16000, 0.2);
    const stereo = new Int16Array(left.length * 2);
    for (let i = 0; i < left.length; i++) [stereo[2 * i], stereo[2 * i + 1]] = [left[i], -left[i] >> 1];
    const { bytes } = await streamed(stereo, { rate: 16000, channels: 2 }, pcmOut(16000, 1));
    const mono = decodePcm16le(bytes);
    expect(mono.length).toBe(left.length);
    for (const i of [0, 100, 1234, left.length - 1])
      expect(Math.abs(mono[i] - (left[i] + (-left[i] >> 1)) / 2)).toBeLessThanOrEqual(1);
  });

  it('duplicates mono into both stereo channels after resampling', async () => {
    const input = signal(24000, 0.3);
    const { bytes } = await streamed(input, { rate: 24000, channels: 1 }, pcmOut(16000, 2));
    const stereo = decodePcm16le(bytes);
    const mono = float32ToInt16(resample(int16ToFloat32(input), 24000, 16000));
    expect(maxDifference(stereo, toChannels(mono, 2))).toBeLessThanOrEqual(1);
  });

  it('scales by a gain below 1 and leaves gain 1 bit-exact', async () => {
    const input = signal(16000, 0.2);
    expect(
      Buffer.compare(
        (await streamed(input, { rate: 16000, channels: 1 }, pcmOut(16000), 1)).bytes,
        encodePcm16le(input),
      ),
    ).toBe(0);
    const half = decodePcm16le((await streamed(input, { rate: 16000, channels: 1 }, pcmOut(16000), 0.5)).bytes);
    expect(maxDifference(half, float32ToInt16(int16ToFloat32(input).map((v) => v * 0.5)))).toBeLessThanOrEqual(1);
  });

  it('limits a loud gain the way applyVolume does on the whole clip, without clipping', async () => {
    const input = signal(24000, 0.6, 0.8);
    const { bytes } = await streamed(input, { rate: 24000, channels: 1 }, pcmOut(24000), 4);
    const out = decodePcm16le(bytes);
    const whole = float32ToInt16(applyVolume(int16ToFloat32(input), 4, 24000));
    expect(maxDifference(out, whole)).toBeLessThanOrEqual(1);
    expect(Math.max(...out.map(Math.abs))).toBeLessThanOrEqual(Math.ceil(0.97 * 32768));
  });

  it('sends WAV whole at the end, with a header that states the requested rate, channels and length', async () => {
    const output: TranscodeOutput = { format: 'wav', sampleRate: 22050, channels: 2, bitrate: 128000 };
    const { bytes, early } = await streamed(signal(24000, 0.5), { rate: 24000, channels: 1 }, output);
    expect(early).toBe(0);
    const info = parseWavHeader(bytes);
    expect(info).toMatchObject({
      formatTag: 1,
      sampleRate: 22050,
      channels: 2,
      bitsPerSample: 16,
      dataLength: bytes.length - 44,
    });
    expect(info.dataLength).toBe(Math.round(0.5 * 22050) * 4);
  });

  it.each([
    ['mp3', 16000, 1],
    ['mp3', 44100, 2],
    ['flac', 32000, 2],
    ['flac', 8000, 1],
  ] as const)('encodes %s at %i Hz with %i channel(s), streaming as it goes', async (format, sampleRate, channels) => {
    const output: TranscodeOutput = { format, sampleRate, channels, bitrate: 64000 };
    const { bytes, early } = await streamed(signal(24000, 1), { rate: 24000, channels: 1 }, output);
    expect(early).toBeGreaterThan(0);
    if (format === 'mp3') {
      const info = scanMp3Frames(bytes);
      expect(info).toMatchObject({
        uniform: true,
        trailingBytes: 0,
        first: { sampleRate, channels, bitrate: outputShape(output).bitrate },
      });
      expect(info.durationSeconds).toBeGreaterThan(0.95);
    } else {
      expect(parseFlacStreamInfo(bytes)).toMatchObject({ sampleRate, channels, bitsPerSample: 16 });
    }
  });

  it('refuses a channel mapping it cannot do', async () => {
    await expect(createTranscoder({ fromRate: 16000, fromChannels: 3, output: pcmOut(16000, 2) })).rejects.toThrow(
      RangeError,
    );
  });
});

describe('transcodeStream', () => {
  it('copes with chunks split inside samples and frames, giving the same bytes as one piece', async () => {
    const input = encodePcm16le(toChannels(signal(24000, 0.3), 2));
    const split: Buffer[] = [];
    for (let at = 0, i = 0; at < input.length; i++) {
      const take = [1, 3, 5, 1000, 7][i % 5];
      split.push(input.subarray(at, at + take));
      at += take;
    }
    const collect = async (source: AsyncIterable<Buffer>): Promise<Buffer> => {
      const out: Buffer[] = [];
      for await (const chunk of transcodeStream(source, { sampleRate: 24000, channels: 2 }, pcmOut(16000, 1)))
        out.push(chunk);
      return Buffer.concat(out);
    };
    const [a, b] = await Promise.all([collect(Readable.from(split)), collect(Readable.from([input]))]);
    expect(a.length).toBe(Math.round((input.length / 4) * (16000 / 24000)) * 2);
    expect(Buffer.compare(a, b)).toBe(0);
  });

  it('drops a truncated trailing byte instead of failing', async () => {
    const source = Readable.from([Buffer.concat([encodePcm16le(signal(16000, 0.1)), Buffer.from([0x12])])]);
    const out: Buffer[] = [];
    for await (const chunk of transcodeStream(source, { sampleRate: 16000, channels: 1 }, pcmOut(16000)))
      out.push(chunk);
    expect(Buffer.concat(out).length).toBe(1600 * 2);
  });

  describe('a stream cut short still ends its encoder (libflac memory is never given back otherwise)', () => {
    const flacOut: TranscodeOutput = { format: 'flac', sampleRate: 16000, channels: 1, bitrate: 128000 };
    const mono = { sampleRate: 16000, channels: 1 };
    const speech = encodePcm16le(signal(16000, 0.5));

    it('when the source throws', async () => {
      const before = liveFlacEncoders();
      async function* failing(): AsyncGenerator<Buffer> {
        yield await Promise.resolve(speech);
        throw new Error('upstream reset');
      }
      const stream = transcodeStream(failing(), mono, flacOut);
      expect((await stream.next()).done).toBe(false);
      expect(liveFlacEncoders()).toBe(before + 1);
      await expect(stream.next()).rejects.toThrow('upstream reset');
      expect(liveFlacEncoders()).toBe(before);
    });

    it('when the consumer stops reading', async () => {
      const before = liveFlacEncoders();
      async function* endless(): AsyncGenerator<Buffer> {
        for (;;) yield await Promise.resolve(speech);
      }
      const stream = transcodeStream(endless(), mono, flacOut);
      expect((await stream.next()).done).toBe(false);
      expect(liveFlacEncoders()).toBe(before + 1);
      await stream.return(undefined);
      expect(liveFlacEncoders()).toBe(before);
    });

    it('and ends it once on a stream read to its end', async () => {
      const before = liveFlacEncoders();
      const out: Buffer[] = [];
      for await (const chunk of transcodeStream(Readable.from([speech]), mono, flacOut)) out.push(chunk);
      expect(parseFlacStreamInfo(Buffer.concat(out)).sampleRate).toBe(16000);
      expect(liveFlacEncoders()).toBe(before);
    });
  });
});
