import { encodeAudio } from './encoders';
import { decodeMulaw } from './mulaw';
import { parseWavHeader } from './parse';

describe('G.711 µ-law', () => {
  const samples = Int16Array.from({ length: 8001 }, (_, i) =>
    Math.round(12000 * Math.sin((2 * Math.PI * 440 * i) / 8000)),
  );

  it('pcmu_raw is one byte a sample that decodes back within µ-law step size', async () => {
    const { bytes, contentType } = await encodeAudio({ samples, sampleRate: 8000, channels: 1 }, 'pcmu_raw', 0);
    expect(contentType).toBe('audio/PCMU;rate=8000;channels=1');
    expect(bytes.length).toBe(samples.length);
    const back = decodeMulaw(bytes);
    // µ-law's largest step at this amplitude is 512: the error stays under half of it
    for (let i = 0; i < samples.length; i++) expect(Math.abs(back[i] - samples[i])).toBeLessThanOrEqual(256);
  });

  it('pcmu_wav is a WAVE file with format tag 7, 8 bits a sample, its data word aligned', async () => {
    const { bytes, contentType } = await encodeAudio({ samples, sampleRate: 8000, channels: 1 }, 'pcmu_wav', 0);
    expect(contentType).toBe('audio/wav');
    const wav = parseWavHeader(bytes);
    expect(wav).toMatchObject({ formatTag: 7, bitsPerSample: 8, channels: 1, sampleRate: 8000, dataLength: 8001 });
    expect(bytes.length).toBe(wav.dataOffset + 8001 + 1);
    expect(bytes.readUInt32LE(4)).toBe(bytes.length - 8);
  });
});
