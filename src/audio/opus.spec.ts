import { decodeOggOpus, pitchOf } from '../../test/support/ogg-opus';
import { encodeAudio } from './encoders';
import { oggCrc, oggOpusSeconds, readOggPages } from './ogg';
import { createOpusEncoder } from './opus';
import { float32ToInt16, toChannels } from './pcm';

function tone(rate: number, channels: number, seconds: number, hz = 440): Int16Array {
  const mono = new Float32Array(Math.round(rate * seconds));
  for (let i = 0; i < mono.length; i++) mono[i] = 0.4 * Math.sin((2 * Math.PI * hz * i) / rate);
  return toChannels(float32ToInt16(mono), channels);
}

describe('Ogg Opus', () => {
  it('computes the Ogg CRC of RFC 3533 (polynomial 0x04c11db7, not reflected)', () => {
    // the CRC-32/MPEG-2 check value without its initial all-ones and final xor: "123456789" → 0x89a1897f
    expect(oggCrc(Buffer.from('123456789'))).toBe(0x89a1897f);
  });

  it.each([
    [24000, 1],
    [44100, 2],
    [8000, 1],
    [32000, 1],
  ])(
    'encodes %i Hz, %i channel(s) that an independent decoder plays back at the same length and pitch',
    async (rate, channels) => {
      const seconds = 1.3;
      const { bytes, contentType } = await encodeAudio(
        { samples: tone(rate, channels, seconds), sampleRate: rate, channels },
        'opus',
        64000,
      );
      expect(contentType).toBe('audio/ogg;codecs=opus');
      expect(bytes.toString('latin1', 0, 4)).toBe('OggS');
      const pages = readOggPages(bytes);
      expect(pages[0].flags).toBe(0x02);
      expect(pages[pages.length - 1].flags & 0x04).toBe(0x04);
      expect(pages[1].packets[0].toString('latin1', 0, 8)).toBe('OpusTags');
      const decoded = await decodeOggOpus(bytes);
      expect(decoded).toMatchObject({ channels, inputSampleRate: rate, crcOk: true, errors: 0 });
      expect(decoded.seconds).toBeCloseTo(seconds, 2);
      expect(oggOpusSeconds(bytes)).toBeCloseTo(seconds, 3);
      expect(pitchOf(decoded.samples, 48000)).toBeGreaterThan(430);
      expect(pitchOf(decoded.samples, 48000)).toBeLessThan(450);
    },
  );

  it('streams: headers with the first push, pages as packets complete, the same length whatever the block sizes', async () => {
    const samples = tone(24000, 1, 2);
    const encoder = createOpusEncoder(24000, 1, 32000);
    const parts: Buffer[] = [];
    for (let at = 0; at < samples.length; at += 777) parts.push(encoder.push(samples.subarray(at, at + 777)));
    parts.push(encoder.end());
    expect(parts[0].toString('latin1', 0, 4)).toBe('OggS');
    expect(parts.filter((part) => part.length > 0).length).toBeGreaterThan(10);
    const decoded = await decodeOggOpus(Buffer.concat(parts));
    expect(decoded.crcOk).toBe(true);
    expect(decoded.seconds).toBeCloseTo(2, 2);
  });

  it('makes a playable file of no audio at all', async () => {
    const encoder = createOpusEncoder(16000, 1, 32000);
    const decoded = await decodeOggOpus(encoder.end());
    // the decoder may play the pre-skip of an empty stream: 312 samples at most
    expect(decoded.seconds).toBeLessThanOrEqual(312 / 48000);
    expect(decoded.crcOk).toBe(true);
  });
});
