export type QuotaPeriod = 'minute' | 'hour' | 'day';

export interface Quota {
  requests: number;
  per: QuotaPeriod;
}

/** Increments counted on this replica since the last drain, for one key step and window. */
export interface CountDelta {
  key: string;
  per: QuotaPeriod;
  windowStart: number;
  n: number;
}

const PERIOD_MS: Record<QuotaPeriod, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

export function windowMs(per: QuotaPeriod): number {
  return PERIOD_MS[per];
}

/** Start of the fixed window holding `now`; epoch ms are UTC, so windows align to UTC minutes, hours, days. */
export function windowStart(per: QuotaPeriod, now: number): number {
  const size = PERIOD_MS[per];
  return Math.floor(now / size) * size;
}

/** Whole seconds (at least 1) until the window holding `now` ends: when a capped step is served again. */
export function secondsLeftInWindow(per: QuotaPeriod, now: number): number {
  return Math.max(1, Math.ceil((windowStart(per, now) + PERIOD_MS[per] - now) / 1000));
}

/** The counter key of one step of one proxy key (caps count per chain position). */
export function stepQuotaKey(keyId: string, chainIndex: number): string {
  return `${keyId}#${chainIndex}`;
}

interface Entry {
  key: string;
  per: QuotaPeriod;
  windowStart: number;
  count: number;
  /** Increments made here and not yet drained to the shared table. */
  pending: number;
}

/** Prune at most this often so the hot path stays O(1). */
const PRUNE_EVERY_MS = 1000;

/** Counts per (key step, window) in memory so a cap check costs no SQL; a periodic sync shares them. */
export class WindowCounter {
  private readonly entries = new Map<string, Entry>();
  private lastPrune = Number.NEGATIVE_INFINITY;

  /** Counts one request unless the cap is reached; false means skip the step. */
  tryConsume(key: string, cap: Quota, now: number): boolean {
    this.prune(now);
    const entry = this.entry(key, cap.per, now);
    if (entry.count >= cap.requests) return false;
    entry.count += 1;
    entry.pending += 1;
    return true;
  }

  /** Requests counted so far in the window holding `now`. */
  count(key: string, per: QuotaPeriod, now: number): number {
    return this.entries.get(entryId(key, per, windowStart(per, now)))?.count ?? 0;
  }

  /** Adds requests counted elsewhere (another replica); they are not drained again. */
  add(key: string, per: QuotaPeriod, now: number, n: number): void {
    if (!(n > 0)) return;
    this.prune(now);
    this.entry(key, per, now).count += n;
  }

  /**
   * Raises the count to a shared total read after a flush, which already holds every drained increment;
   * a total of another window than the current one (`of`) is ignored.
   */
  observeTotal(key: string, per: QuotaPeriod, now: number, total: number, of = windowStart(per, now)): void {
    if (of !== windowStart(per, now)) return;
    this.prune(now);
    const entry = this.entry(key, per, now);
    entry.count = Math.max(entry.count, total + entry.pending);
  }

  /** Increments since the last drain, oldest window first; expired windows are dropped afterwards. */
  drainDeltas(now: number): CountDelta[] {
    const deltas: CountDelta[] = [];
    for (const entry of this.entries.values()) {
      if (entry.pending === 0) continue;
      deltas.push({ key: entry.key, per: entry.per, windowStart: entry.windowStart, n: entry.pending });
      entry.pending = 0;
    }
    this.prune(now, true);
    return deltas.sort((a, b) => a.windowStart - b.windowStart);
  }

  /** Increments a failed exchange could not hand over: drained again next time (windows already ended are dropped). */
  undrain(deltas: CountDelta[]): void {
    for (const d of deltas) {
      const entry = this.entries.get(entryId(d.key, d.per, d.windowStart));
      if (entry) entry.pending += d.n;
    }
  }

  /** Number of windows held in memory. */
  get size(): number {
    return this.entries.size;
  }

  private entry(key: string, per: QuotaPeriod, now: number): Entry {
    const start = windowStart(per, now);
    const id = entryId(key, per, start);
    let entry = this.entries.get(id);
    if (!entry) {
      entry = { key, per, windowStart: start, count: 0, pending: 0 };
      this.entries.set(id, entry);
    }
    return entry;
  }

  /** Drops ended windows; undrained ones get one more window of grace so a late sync still sees them. */
  private prune(now: number, force = false): void {
    if (!force && now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    for (const [id, entry] of this.entries) {
      const end = entry.windowStart + PERIOD_MS[entry.per];
      const keepUntil = entry.pending > 0 ? end + PERIOD_MS[entry.per] : end;
      if (now >= keepUntil) this.entries.delete(id);
    }
  }
}

function entryId(key: string, per: QuotaPeriod, start: number): string {
  return `${key}\u0000${per}\u0000${start}`;
}
