import { endianness } from 'node:os';

/** Mono or interleaved 16-bit samples at a known rate: what every encoder consumes. */
export interface PcmAudio {
  samples: Int16Array;
  sampleRate: number;
  channels: number;
}

/** Int16 → float in [-1, 1). */
export function int16ToFloat32(samples: Int16Array): Float32Array {
  const out = new Float32Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = samples[i] / 32768;
  return out;
}

/** Float → Int16, rounded and clamped (anything past full scale saturates instead of wrapping). */
export function float32ToInt16(samples: Float32Array): Int16Array {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const v = Math.round(samples[i] * 32768);
    out[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
  }
  return out;
}

/** Duplicates a mono signal into `channels` interleaved channels (the engine only ever speaks mono). */
export function toChannels(mono: Int16Array, channels: number): Int16Array {
  if (!Number.isInteger(channels) || channels < 1)
    throw new RangeError(`channels must be a positive integer, got ${channels}`);
  if (channels === 1) return mono;
  const out = new Int16Array(mono.length * channels);
  for (let i = 0; i < mono.length; i++) out.fill(mono[i], i * channels, i * channels + channels);
  return out;
}

/** Highest peak the limiter lets through: a little headroom for MP3's reconstruction overshoot. */
const LIMITER_CEILING = 0.97;
/** Gain falls over 5 ms before a peak, holds 20 ms (a 50 Hz period, so it never follows the waveform itself), recovers over 80 ms. */
const LIMITER_ATTACK_SECONDS = 0.005;
const LIMITER_HOLD_SECONDS = 0.02;
const LIMITER_RELEASE_SECONDS = 0.08;

/** `vol` as a linear gain, with a look-ahead limiter instead of clipping so a loud `vol` sounds compressed, not distorted. */
export function applyVolume(samples: Float32Array, gain: number, sampleRate: number): Float32Array {
  const n = samples.length;
  const out = new Float32Array(n);
  // per-sample gain that keeps this sample under the ceiling
  const envelope = new Float32Array(n);
  let limited = false;
  for (let i = 0; i < n; i++) {
    const level = Math.abs(samples[i] * gain);
    envelope[i] = level > LIMITER_CEILING ? LIMITER_CEILING / level : 1;
    limited ||= envelope[i] < 1;
  }
  if (!limited) {
    for (let i = 0; i < n; i++) out[i] = samples[i] * gain;
    return out;
  }
  const held = slidingMinimum(envelope, Math.round(sampleRate * LIMITER_HOLD_SECONDS));
  // backward pass: ramp down ahead of each peak; forward pass: ramp back up after it (both slope-limited)
  const attackStep = 1 / Math.max(1, Math.round(sampleRate * LIMITER_ATTACK_SECONDS));
  const releaseStep = 1 / Math.max(1, Math.round(sampleRate * LIMITER_RELEASE_SECONDS));
  for (let i = n - 2; i >= 0; i--) held[i] = Math.min(held[i], held[i + 1] + attackStep);
  let current = held[0];
  for (let i = 0; i < n; i++) {
    current = Math.min(held[i], current + releaseStep);
    out[i] = samples[i] * gain * current;
  }
  return out;
}

/** Minimum over the window [i - radius, i + radius] for every i, in O(n) with a monotonic deque. */
function slidingMinimum(values: Float32Array, radius: number): Float32Array {
  const n = values.length;
  const out = new Float32Array(n);
  const deque = new Int32Array(n);
  let head = 0;
  let tail = 0;
  let next = 0; // next index to enter the window
  for (let i = 0; i < n; i++) {
    for (; next < n && next <= i + radius; next++) {
      while (tail > head && values[deque[tail - 1]] >= values[next]) tail--;
      deque[tail++] = next;
    }
    while (deque[head] < i - radius) head++;
    out[i] = values[deque[head]];
  }
  return out;
}

const LITTLE_ENDIAN_HOST = endianness() === 'LE';

/** Raw signed 16-bit little-endian bytes, whatever the host's byte order. */
export function encodePcm16le(samples: Int16Array): Buffer {
  if (LITTLE_ENDIAN_HOST) return Buffer.from(new Uint8Array(samples.buffer, samples.byteOffset, samples.byteLength));
  const out = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++) out.writeInt16LE(samples[i], i * 2);
  return out;
}

/** Reads signed 16-bit little-endian bytes back into samples (an odd trailing byte is an error). */
export function decodePcm16le(bytes: Uint8Array): Int16Array {
  if (bytes.length % 2 !== 0) throw new RangeError(`16-bit PCM needs an even byte count, got ${bytes.length}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Int16Array(bytes.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = view.getInt16(i * 2, true);
  return out;
}

// --- Band-limited resampling: windowed-sinc (Kaiser), polyphase ---------------------------------

/** Sinc zero crossings on each side of the centre tap: 32 keeps the transition band near 8% of Nyquist. */
const ZERO_CROSSINGS = 32;
/** Kaiser beta 8 gives about 80 dB stop-band rejection. */
const KAISER_BETA = 8;
/** Cutoff as a fraction of the lower Nyquist; with the transition band this puts the stop band just under Nyquist. */
const CUTOFF = 0.92;
/** Most polyphase tables kept; above this ratios are rounded to the nearest of this many phases (error < 1e-4 sample). */
const MAX_PHASES = 4096;

interface FilterBank {
  /** Input-rate steps per output sample, as the reduced ratio down/up. */
  up: number;
  down: number;
  phases: number;
  taps: number;
  /** `phases` rows of `taps` coefficients; row p serves an output landing p/phases past an input sample. */
  coefficients: Float32Array;
}

const banks = new Map<string, FilterBank>();

/** Kaiser-windowed sinc resampler (anti-aliasing down, anti-imaging up): tones below Nyquist keep frequency and level. */
export function resample(samples: Float32Array, fromRate: number, toRate: number): Float32Array {
  if (!(fromRate > 0 && toRate > 0) || !Number.isInteger(fromRate) || !Number.isInteger(toRate)) {
    throw new RangeError(`sample rates must be positive integers, got ${fromRate} → ${toRate}`);
  }
  if (fromRate === toRate) return samples.slice();
  const bank = filterBank(fromRate, toRate);
  const { up, down, phases, taps, coefficients } = bank;
  const half = taps / 2;
  const outLength = Math.round((samples.length * toRate) / fromRate);
  const out = new Float32Array(outLength);
  for (let n = 0; n < outLength; n++) {
    // exact rational position: input index `base` plus `offset/up` of a sample
    const position = n * down;
    let base = Math.floor(position / up);
    let phase = phases === up ? position - base * up : Math.round(((position - base * up) / up) * phases);
    if (phase === phases) {
      phase = 0;
      base += 1;
    }
    const row = phase * taps;
    const first = base - half + 1;
    let acc = 0;
    const kStart = Math.max(0, -first);
    const kEnd = Math.min(taps, samples.length - first);
    for (let k = kStart; k < kEnd; k++) acc += samples[first + k] * coefficients[row + k];
    out[n] = acc;
  }
  return out;
}

function filterBank(fromRate: number, toRate: number): FilterBank {
  const key = `${fromRate}:${toRate}`;
  const cached = banks.get(key);
  if (cached) return cached;
  const divisor = gcd(fromRate, toRate);
  const up = toRate / divisor;
  const down = fromRate / divisor;
  const phases = Math.min(up, MAX_PHASES);
  // cutoff in cycles per input sample ×2 (1 = input Nyquist); downsampling moves it to the output Nyquist
  const cutoff = CUTOFF * Math.min(1, toRate / fromRate);
  // widening the kernel as the cutoff drops keeps the same number of zero crossings, hence the same sharpness
  const taps = 2 * Math.ceil(ZERO_CROSSINGS / cutoff);
  const half = taps / 2;
  const coefficients = new Float32Array(phases * taps);
  const norm = besselI0(KAISER_BETA);
  for (let p = 0; p < phases; p++) {
    const fraction = p / phases;
    let sum = 0;
    for (let k = 0; k < taps; k++) {
      const t = k - half + 1 - fraction; // distance in input samples from the output instant
      const ratio = t / half;
      const window = Math.abs(ratio) >= 1 ? 0 : besselI0(KAISER_BETA * Math.sqrt(1 - ratio * ratio)) / norm;
      const value = cutoff * sinc(cutoff * t) * window;
      coefficients[p * taps + k] = value;
      sum += value;
    }
    // unit DC gain per phase, so level never ripples with the fractional position
    for (let k = 0; k < taps; k++) coefficients[p * taps + k] /= sum;
  }
  const bank = { up, down, phases, taps, coefficients };
  banks.set(key, bank);
  return bank;
}

function sinc(x: number): number {
  if (x === 0) return 1;
  const px = Math.PI * x;
  return Math.sin(px) / px;
}

/** Zeroth-order modified Bessel function of the first kind (series; converges fast for beta ≤ 20). */
function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  const quarterSquare = (x * x) / 4;
  for (let k = 1; k < 50; k++) {
    term *= quarterSquare / (k * k);
    sum += term;
    if (term < sum * 1e-12) break;
  }
  return sum;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
