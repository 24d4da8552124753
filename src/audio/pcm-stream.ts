/** pcm.ts's `resample` and `applyVolume` limiter over a stream of planar chunks, matching the whole-clip results. */
import { resample } from './pcm';

function concatPlanes(a: Float32Array, b: Float32Array): Float32Array {
  if (a.length === 0) return b;
  const out = new Float32Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

const reaches = new Map<string, number>();

/** How far (input samples) `resample`'s kernel reaches either side; measured, since pcm.ts keeps its filter private. */
function kernelReach(fromRate: number, toRate: number): number {
  const key = `${fromRate}:${toRate}`;
  const known = reaches.get(key);
  if (known !== undefined) return known;
  for (let length = 2048; ; length *= 2) {
    const impulse = new Float32Array(length);
    impulse[length >> 1] = 1;
    const out = resample(impulse, fromRate, toRate);
    const [first, last] = [out.findIndex((v) => v !== 0), out.findLastIndex((v) => v !== 0)];
    if (first <= 0 || last >= out.length - 1) continue; // the kernel ran off the probe: try a longer one
    const reach =
      Math.ceil(Math.max(length / 2 - (first * fromRate) / toRate, (last * fromRate) / toRate - length / 2)) + 2;
    reaches.set(key, reach);
    return reach;
  }
}

/** `resample` over a stream: windows hold every input an emitted output's kernel touches and start on a ratio multiple, so outputs equal whole-array ones. */
export class StreamResampler {
  private readonly up: number;
  private readonly down: number;
  private readonly reach: number;
  private planes: Float32Array[];
  /** Global index of planes[c][0] (a multiple of `down`), inputs received, outputs emitted. */
  private start = 0;
  private received = 0;
  private emitted = 0;

  constructor(
    private readonly fromRate: number,
    private readonly toRate: number,
    channels: number,
  ) {
    [this.up, this.down] = [toRate / gcd(fromRate, toRate), fromRate / gcd(fromRate, toRate)];
    this.reach = kernelReach(fromRate, toRate);
    this.planes = Array.from({ length: channels }, () => new Float32Array(0));
  }

  push(planes: Float32Array[]): Float32Array[] {
    this.append(planes);
    // outputs whose kernel lies wholly inside what arrived
    return this.emit(Math.max(0, Math.ceil(((this.received - this.reach) * this.up) / this.down)));
  }

  end(planes: Float32Array[]): Float32Array[] {
    this.append(planes);
    return this.emit(Math.round((this.received * this.up) / this.down));
  }

  private append(planes: Float32Array[]): void {
    this.planes = this.planes.map((plane, c) => concatPlanes(plane, planes[c]));
    this.received += planes[0].length;
  }

  private emit(limit: number): Float32Array[] {
    if (limit <= this.emitted) return this.planes.map(() => new Float32Array(0));
    const startOut = (this.start * this.up) / this.down;
    const out = this.planes.map((plane) =>
      resample(plane, this.fromRate, this.toRate).slice(this.emitted - startOut, limit - startOut),
    );
    this.emitted = limit;
    const firstNeeded = Math.floor((limit * this.down) / this.up) - this.reach;
    const start = Math.max(this.start, Math.floor(Math.max(0, firstNeeded) / this.down) * this.down);
    this.planes = this.planes.map((plane) => plane.slice(start - this.start));
    this.start = start;
    return out;
  }
}

/** Mirrors applyVolume's limiter in pcm.ts (same ceiling and times), so streamed gain matches the whole-clip result. */
const CEILING = 0.97;
const ATTACK_SECONDS = 0.005;
const HOLD_SECONDS = 0.02;
const RELEASE_SECONDS = 0.08;

/** applyVolume as a stream: hold (sliding min) and attack (backward ramp) look `hold + attack` frames ahead, so output lags that much. */
export class StreamLimiter {
  private readonly hold: number;
  private readonly attack: number;
  private readonly attackStep: number;
  private readonly releaseStep: number;
  /** Per-frame gain that keeps that frame under the ceiling, from global frame `levelsStart`. */
  private levels = new Float64Array(0);
  private levelsStart = 0;
  private pending: Float32Array[];
  /** Global index of pending[c][0]. */
  private next = 0;
  private current = 1;

  constructor(
    private readonly gain: number,
    sampleRate: number,
    channels: number,
  ) {
    this.hold = Math.round(sampleRate * HOLD_SECONDS);
    this.attack = Math.max(1, Math.round(sampleRate * ATTACK_SECONDS));
    this.attackStep = 1 / this.attack;
    this.releaseStep = 1 / Math.max(1, Math.round(sampleRate * RELEASE_SECONDS));
    this.pending = Array.from({ length: channels }, () => new Float32Array(0));
  }

  process(planes: Float32Array[], final: boolean): Float32Array[] {
    const frames = planes[0].length;
    const levels = new Float64Array(this.levels.length + frames);
    levels.set(this.levels);
    for (let i = 0; i < frames; i++) {
      let peak = 0;
      for (const plane of planes) peak = Math.max(peak, Math.abs(plane[i] * this.gain));
      levels[this.levels.length + i] = peak > CEILING ? CEILING / peak : 1;
    }
    this.levels = levels;
    this.pending = this.pending.map((plane, c) => concatPlanes(plane, planes[c]));
    const received = this.next + this.pending[0].length;
    const end = final ? received : received - this.attack - this.hold;
    if (end <= this.next) return this.pending.map(() => new Float32Array(0));

    // levels for frames next-hold .. end+attack+hold, padded with 1 (never limits) past either end
    const from = this.next - this.hold;
    const window = new Float64Array(end + this.attack + this.hold - from).fill(1);
    for (let g = Math.max(from, this.levelsStart); g < Math.min(received, from + window.length); g++)
      window[g - from] = this.levels[g - this.levelsStart];
    const held = windowMin(window, 2 * this.hold + 1); // frames next .. end+attack
    for (let k = 0; k < held.length; k++) held[k] += k * this.attackStep;
    const ramped = windowMin(held, this.attack + 1); // frames next .. end
    const out = this.pending.map((plane) => plane.slice(0, end - this.next));
    for (let k = 0; k < ramped.length; k++) {
      this.current = Math.min(ramped[k] - k * this.attackStep, this.current + this.releaseStep);
      for (const plane of out) plane[k] *= this.gain * this.current;
    }
    this.pending = this.pending.map((plane) => plane.slice(end - this.next));
    this.next = end;
    const keepFrom = Math.max(this.levelsStart, end - this.hold);
    this.levels = this.levels.slice(keepFrom - this.levelsStart);
    this.levelsStart = keepFrom;
    return out;
  }
}

/** out[i] = min(values[i .. i + width)), in O(n) with a monotonic deque. */
function windowMin(values: Float64Array, width: number): Float64Array {
  const count = values.length - width + 1;
  if (count <= 0) return new Float64Array(0);
  const out = new Float64Array(count);
  const deque = new Int32Array(values.length);
  let head = 0;
  let tail = 0;
  for (let i = 0; i < values.length; i++) {
    while (tail > head && values[deque[tail - 1]] >= values[i]) tail--;
    deque[tail++] = i;
    if (deque[head] <= i - width) head++;
    if (i >= width - 1) out[i - width + 1] = values[deque[head]];
  }
  return out;
}
