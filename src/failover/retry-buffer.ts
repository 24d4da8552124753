/** Waits before the n-th retry: `firstMs`, doubling, at most `maxMs`. */
export interface Backoff {
  firstMs: number;
  maxMs: number;
}

/** An item and its write history. */
export interface BufferedEntry<T> {
  item: T;
  /** Failed writes so far. */
  failures: number;
  dueAt: number;
}

/**
 * Items waiting to be written, in order, with a backoff after each failed write, and a capacity
 * (waiting and in-flight together) past which new items are refused. Pure: the caller passes the time.
 */
export class RetryBuffer<T> {
  private waiting: Array<BufferedEntry<T>> = [];
  private inFlight = 0;

  constructor(
    readonly capacity: number,
    private readonly backoff: Backoff,
  ) {}

  /** Items held, waiting or being written. */
  get size(): number {
    return this.waiting.length + this.inFlight;
  }

  /** Queues an item for a write now; false (not queued) when the buffer is full. */
  add(item: T, now: number): boolean {
    if (this.size >= this.capacity) return false;
    this.waiting.push({ item, failures: 0, dueAt: now });
    return true;
  }

  /** Takes up to `max` items whose wait is over, oldest first; they count as in flight until settled. */
  take(now: number, max: number): Array<BufferedEntry<T>> {
    const taken: Array<BufferedEntry<T>> = [];
    const kept: Array<BufferedEntry<T>> = [];
    for (const entry of this.waiting) {
      if (taken.length < max && entry.dueAt <= now) taken.push(entry);
      else kept.push(entry);
    }
    this.waiting = kept;
    this.inFlight += taken.length;
    return taken;
  }

  /** The write of `entries` succeeded (or they were given up): they leave the buffer. */
  done(entries: ReadonlyArray<BufferedEntry<T>>): void {
    this.inFlight -= entries.length;
  }

  /** The write of `entries` failed: they wait their backoff and are tried again. */
  failed(entries: ReadonlyArray<BufferedEntry<T>>, now: number): void {
    this.inFlight -= entries.length;
    for (const entry of entries) {
      entry.failures += 1;
      entry.dueAt = now + this.waitAfter(entry.failures);
    }
    // back in front: they are older than anything queued while they were in flight
    this.waiting = [...entries, ...this.waiting];
  }

  /** When the soonest waiting item is due (null when none waits). */
  nextDue(): number | null {
    let soonest: number | null = null;
    for (const entry of this.waiting) if (soonest === null || entry.dueAt < soonest) soonest = entry.dueAt;
    return soonest;
  }

  /** Every waiting item, removed (given up at shutdown). */
  drain(): T[] {
    const items = this.waiting.map((e) => e.item);
    this.waiting = [];
    return items;
  }

  private waitAfter(failures: number): number {
    return Math.min(this.backoff.maxMs, this.backoff.firstMs * 2 ** (failures - 1));
  }
}
