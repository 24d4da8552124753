import { createFlacEncoder } from './flac';
import { withFlacLength } from './flac-length';
import { parseFlacStreamInfo } from './parse';

/** A tone of `frames` frames, `channels` interleaved. */
const tone = (frames: number, channels: number): Int16Array => {
  const samples = new Int16Array(frames * channels);
  for (let i = 0; i < samples.length; i++) samples[i] = Math.round(8000 * Math.sin((i / channels) * 0.05));
  return samples;
};

/** A FLAC made as a live stream: its header sent first, with 0 total samples. */
const streamed = async (samples: Int16Array, sampleRate: number, channels: number, slice: number): Promise<Buffer> => {
  const encoder = await createFlacEncoder(sampleRate, channels);
  const parts: Buffer[] = [];
  for (let i = 0; i < samples.length; i += slice * channels)
    parts.push(encoder.push(samples.subarray(i, i + slice * channels)));
  parts.push(encoder.end());
  return Buffer.concat(parts);
};

describe('withFlacLength', () => {
  it.each([
    [16000, 1, 16000 * 1.3 + 7],
    [32000, 2, 32000 * 0.5],
    [22050, 1, 100],
    [44100, 2, 4096 * 3],
  ])(
    'writes the total samples of a whole stream into STREAMINFO (%i Hz, %i ch, %i frames)',
    async (rate, ch, frames) => {
      const bytes = await streamed(tone(frames, ch), rate, ch, 1000);
      expect(parseFlacStreamInfo(bytes).totalSamples).toBe(0);

      const whole = withFlacLength(bytes);

      const info = parseFlacStreamInfo(whole);
      expect(info).toMatchObject({ sampleRate: rate, channels: ch, totalSamples: frames });
      expect(info.totalSamples / info.sampleRate).toBeCloseTo(frames / rate, 6);
      // only the length changed: the frames are the same bytes
      expect(whole.length).toBe(bytes.length);
      expect(whole.subarray(26).equals(bytes.subarray(26))).toBe(true);
    },
  );

  it('leaves a FLAC that already knows its length, and bytes that are not FLAC, as they are', async () => {
    const encoder = await createFlacEncoder(16000, 1, 1600);
    const known = Buffer.concat([encoder.push(tone(1600, 1)), encoder.end()]);
    expect(withFlacLength(known)).toBe(known);
    const mp3ish = Buffer.from('ID3 not a flac file at all, and long enough to be parsed as one');
    expect(withFlacLength(mp3ish)).toBe(mp3ish);
  });
});
