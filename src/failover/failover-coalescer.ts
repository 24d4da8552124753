/** What one failover is about (decisions §8): the same four values make the same condition. */
export interface FailoverCondition {
  keyId: string;
  model: string;
  exhaustedProvider: string | null;
  activeProvider: string;
}

/** The request-specific part of a failover, kept for the closing event of its window. */
export interface FailoverSample {
  fallbackLevel: number;
  latencyMs: number;
  requestId: string;
}

/** The end of a window in which later failovers were only counted. */
export interface ClosingEvent {
  condition: FailoverCondition;
  /** The last failover counted in the window. */
  last: FailoverSample;
  /** How many failovers (after the window's first) the closing event stands for. */
  count: number;
  windowSecs: number;
}

interface Window {
  condition: FailoverCondition;
  endsAt: number;
  count: number;
  last: FailoverSample | null;
}

/** The four values joined by a character none of them holds (JSON.stringify of them cost a microsecond a request). */
const conditionKey = (c: FailoverCondition): string =>
  `${c.keyId}\u0000${c.model}\u0000${c.exhaustedProvider ?? '\u0001'}\u0000${c.activeProvider}`;

/**
 * Coalesces failover events per condition: the first failover of a condition opens a window and is
 * its own event; the later ones in the window are only counted, and closing the window yields one
 * event for them. A window of 0 makes every failover its own event. Pure: the caller passes the time.
 */
export class FailoverCoalescer {
  private readonly windows = new Map<string, Window>();
  /** Windows that ended before due() saw them (a new failover of their condition came first). */
  private ended: ClosingEvent[] = [];

  /**
   * @param windowMs how long a condition's window lasts (0 = no coalescing)
   * @param maxOpen windows open at once at most; past it a failover is its own event (memory stays bounded)
   */
  constructor(
    readonly windowMs: number,
    private readonly maxOpen = 10_000,
  ) {}

  /** 'event' when this failover is to be stored as an event of its own now, 'counted' when its window counts it. */
  observe(condition: FailoverCondition, sample: FailoverSample, now: number): 'event' | 'counted' {
    if (this.windowMs <= 0) return 'event';
    const key = conditionKey(condition);
    const open = this.windows.get(key);
    if (open && now < open.endsAt) {
      open.count += 1;
      open.last = sample;
      return 'counted';
    }
    if (open) this.endWindow(key, open);
    if (this.windows.size >= this.maxOpen) return 'event';
    this.windows.set(key, { condition, endsAt: now + this.windowMs, count: 0, last: null });
    return 'event';
  }

  /** Closes the windows that ended by `now`: one closing event for each that counted something. */
  due(now: number): ClosingEvent[] {
    return this.close((w) => w.endsAt <= now);
  }

  /** Closes every window now (shutdown): nothing counted is left behind. */
  closeAll(): ClosingEvent[] {
    return this.close(() => true);
  }

  /** When the soonest open window ends (now-ish when an ended one waits to be reported; null when none). */
  nextEnd(): number | null {
    let soonest: number | null = this.ended.length > 0 ? 0 : null;
    for (const w of this.windows.values()) if (soonest === null || w.endsAt < soonest) soonest = w.endsAt;
    return soonest;
  }

  /** Failovers counted in windows, not yet in any closing event. */
  get counted(): number {
    let total = 0;
    for (const w of this.windows.values()) total += w.count;
    for (const e of this.ended) total += e.count;
    return total;
  }

  private close(ended: (w: Window) => boolean): ClosingEvent[] {
    for (const [key, w] of this.windows) if (ended(w)) this.endWindow(key, w);
    const closing = this.ended;
    this.ended = [];
    return closing;
  }

  private endWindow(key: string, w: Window): void {
    this.windows.delete(key);
    if (w.count > 0 && w.last)
      this.ended.push({ condition: w.condition, last: w.last, count: w.count, windowSecs: this.windowMs / 1000 });
  }
}
