import { applyVolume, decodePcm16le, encodePcm16le, float32ToInt16, int16ToFloat32, resample, toChannels } from './pcm';

function sine(frequency: number, rate: number, seconds: number, amplitude: number): Float32Array {
  const out = new Float32Array(Math.round(rate * seconds));
  for (let i = 0; i < out.length; i++) out[i] = amplitude * Math.sin((2 * Math.PI * frequency * i) / rate);
  return out;
}

/** The middle of a signal, away from the filter's start-up and tail. */
function middle(samples: Float32Array): Float32Array {
  return samples.subarray(Math.floor(samples.length * 0.2), Math.floor(samples.length * 0.8));
}

function frequencyByZeroCrossings(samples: Float32Array, rate: number): number {
  let first = -1;
  let last = -1;
  let crossings = 0;
  for (let i = 1; i < samples.length; i++) {
    if (samples[i - 1] < 0 && samples[i] >= 0) {
      // interpolate the crossing instant for sub-sample precision
      const at = i - 1 + -samples[i - 1] / (samples[i] - samples[i - 1]);
      if (first < 0) first = at;
      else crossings += 1;
      last = at;
    }
  }
  return (crossings * rate) / (last - first);
}

function rms(samples: Float32Array): number {
  let sum = 0;
  for (const v of samples) sum += v * v;
  return Math.sqrt(sum / samples.length);
}

function peak(samples: Float32Array): number {
  let max = 0;
  for (const v of samples) max = Math.max(max, Math.abs(v));
  return max;
}

describe('resample', () => {
  const tone = sine(1000, 22050, 1, 0.5);

  it.each([44100, 8000, 16000, 32000])('keeps a 1 kHz tone at 1 kHz and its level when going 22050 → %i Hz', (rate) => {
    const out = resample(tone, 22050, rate);
    expect(out.length).toBe(rate);
    expect(frequencyByZeroCrossings(middle(out), rate)).toBeCloseTo(1000, 0);
    expect(peak(middle(out))).toBeCloseTo(0.5, 2);
    expect(rms(middle(out)) / rms(middle(tone))).toBeCloseTo(1, 2);
  });

  it('removes a tone above the new Nyquist instead of folding it back as an alias', () => {
    const out = resample(sine(6000, 22050, 1, 0.5), 22050, 8000);
    // 6 kHz would alias to 2 kHz at 8 kHz; the anti-aliasing filter leaves it more than 60 dB down
    expect(rms(middle(out))).toBeLessThan(0.5 * 0.001);
  });

  it('interpolates new samples rather than repeating old ones when upsampling', () => {
    const out = resample(tone, 22050, 44100);
    let repeats = 0;
    for (let i = 1; i < out.length; i++) if (out[i] === out[i - 1]) repeats += 1;
    expect(repeats).toBeLessThan(10);
  });

  it('returns a copy when the rates are equal and rejects non-integer rates', () => {
    const out = resample(tone, 22050, 22050);
    expect(out).toEqual(tone);
    expect(out).not.toBe(tone);
    expect(() => resample(tone, 22050.5, 8000)).toThrow(RangeError);
  });
});

describe('sample conversions', () => {
  it('saturates floats past full scale instead of wrapping around', () => {
    expect([...float32ToInt16(new Float32Array([0, 0.5, 1.5, -1.5, -1]))]).toEqual([0, 16384, 32767, -32768, -32768]);
  });

  it('round-trips Int16 through float exactly', () => {
    const samples = new Int16Array([-32768, -1, 0, 1, 12345, 32767]);
    expect(float32ToInt16(int16ToFloat32(samples))).toEqual(samples);
  });

  it('duplicates mono into interleaved stereo', () => {
    expect([...toChannels(new Int16Array([1, -2, 3]), 2)]).toEqual([1, 1, -2, -2, 3, 3]);
    const mono = new Int16Array([5]);
    expect(toChannels(mono, 1)).toBe(mono);
  });

  it('writes 16-bit little-endian bytes and reads them back', () => {
    const bytes = encodePcm16le(new Int16Array([0x0102, -2]));
    expect([...bytes]).toEqual([0x02, 0x01, 0xfe, 0xff]);
    expect([...decodePcm16le(bytes)]).toEqual([0x0102, -2]);
    expect(() => decodePcm16le(new Uint8Array(3))).toThrow(RangeError);
  });
});

describe('applyVolume', () => {
  it('scales audio that stays under full scale linearly', () => {
    const out = applyVolume(new Float32Array([0.1, -0.2]), 2, 22050);
    expect(out[0]).toBeCloseTo(0.2, 6);
    expect(out[1]).toBeCloseTo(-0.4, 6);
  });

  it('limits a loud gain below full scale without clipping the waveform', () => {
    const tone = sine(440, 22050, 1, 0.5);
    const out = applyVolume(tone, 10, 22050);
    expect(peak(out)).toBeLessThanOrEqual(0.97 + 1e-6);
    // a limited sine stays a sine (RMS = peak/√2); a clipped one turns square (RMS → peak)
    expect(rms(middle(out))).toBeCloseTo(0.97 / Math.SQRT2, 2);
    expect(frequencyByZeroCrossings(middle(out), 22050)).toBeCloseTo(440, 0);
  });

  it('turns the gain down gradually around a sudden peak, not in one step', () => {
    const signal = new Float32Array(2000).fill(0.05);
    signal[1000] = 0.9;
    const out = applyVolume(signal, 4, 22050);
    expect(Math.abs(out[1000])).toBeLessThanOrEqual(0.97 + 1e-6);
    for (let i = 901; i < 1000; i++) expect(out[i - 1] - out[i]).toBeLessThan(0.01);
    expect(out[0]).toBeCloseTo(0.2, 6);
  });
});
