/** What one failover is about (decisions §8): the same four values make the same condition. */
export interface FailoverCondition {
  keyId: string;
  model: string;
  exhaustedProvider: string | null;
  activeProvider: string;
  /** The failover continued a stream that broke after its first byte (decisions §3): a condition of its own. */
  midStream?: boolean;
}

/** The request-specific part of a failover, kept for the closing event of its window. */
export interface FailoverSample {
  fallbackLevel: number;
  latencyMs: number;
  requestId: string;
  /** The W3C traceparent of the request's SERVER span (decisions §12); absent or null while traces are off. */
  traceparent?: string | null;
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

/** What stands for "no exhausted provider" in the lookup (not a provider name: names hold no control characters). */
const NO_EXHAUSTED = '\u0001';
/** Marks the exhausted level of a mid-stream condition (built only on that rare path). */
const MID_STREAM = '\u0002';

const exhaustedKey = (c: FailoverCondition): string =>
  c.midStream ? MID_STREAM + (c.exhaustedProvider ?? '') : (c.exhaustedProvider ?? NO_EXHAUSTED);

/**
 * Values by condition, one Map level per field: each field is a string the request already holds (its hash
 * kept), where a joined key was a new string to build and hash on every failover (about 0.2 µs more).
 */
class ConditionIndex<V> {
  private readonly root = new Map<string, Map<string, Map<string, Map<string, V>>>>();

  get(c: FailoverCondition): V | undefined {
    return this.root.get(c.keyId)?.get(c.model)?.get(exhaustedKey(c))?.get(c.activeProvider);
  }

  set(c: FailoverCondition, value: V): void {
    const byModel = getOrMake(this.root, c.keyId);
    const byExhausted = getOrMake(byModel, c.model);
    getOrMake(byExhausted, exhaustedKey(c)).set(c.activeProvider, value);
  }

  /** Removes the condition's value, and the levels left empty. */
  delete(c: FailoverCondition): void {
    const exhausted = exhaustedKey(c);
    const byModel = this.root.get(c.keyId);
    const byExhausted = byModel?.get(c.model);
    const byActive = byExhausted?.get(exhausted);
    if (!byModel || !byExhausted || !byActive?.delete(c.activeProvider)) return;
    if (byActive.size === 0) byExhausted.delete(exhausted);
    if (byExhausted.size === 0) byModel.delete(c.model);
    if (byModel.size === 0) this.root.delete(c.keyId);
  }
}

function getOrMake<K, V>(map: Map<K, Map<string, V>>, key: K): Map<string, V> {
  let inner = map.get(key);
  if (!inner) map.set(key, (inner = new Map<string, V>()));
  return inner;
}

/**
 * Coalesces failover events per condition: the first failover of a condition opens a window and is
 * its own event; the later ones in the window are only counted, and closing the window yields one
 * event for them. A window of 0 makes every failover its own event. Pure: the caller passes the time.
 */
export class FailoverCoalescer {
  /** The open windows, found by condition... */
  private readonly byCondition = new ConditionIndex<Window>();
  /** ...and all of them, in the order they opened. */
  private readonly windows = new Set<Window>();
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
    const open = this.byCondition.get(condition);
    if (open && now < open.endsAt) {
      open.count += 1;
      open.last = sample;
      return 'counted';
    }
    if (open) this.endWindow(open);
    if (this.windows.size >= this.maxOpen) return 'event';
    const opened: Window = { condition, endsAt: now + this.windowMs, count: 0, last: null };
    this.windows.add(opened);
    this.byCondition.set(condition, opened);
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
    for (const w of this.windows) if (ended(w)) this.endWindow(w);
    const closing = this.ended;
    this.ended = [];
    return closing;
  }

  private endWindow(w: Window): void {
    this.windows.delete(w);
    this.byCondition.delete(w.condition);
    if (w.count > 0 && w.last)
      this.ended.push({ condition: w.condition, last: w.last, count: w.count, windowSecs: this.windowMs / 1000 });
  }
}
