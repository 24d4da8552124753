import { CallAbort, type CallSignal } from '../common/call-signal';
import { UpstreamFailure } from './provider-adapter';

/** Default share of a provider's upstream sockets that one key may hold at once (`SVC_UPSTREAM_KEY_SHARE`). */
export const DEFAULT_KEY_SHARE = 0.5;

interface Waiter {
  readonly tenant: string;
  readonly signal: CallSignal;
  readonly ledger: CallAbort | null;
  readonly start: () => void;
  readonly refuse: (failure: UpstreamFailure) => void;
  readonly onAbort: () => void;
}

/** Whose share an upstream call uses: the key noted on its attempt's signal; '' for the gateway's own calls (probes, voices). */
export const tenantOf = (signal: CallSignal): string => (signal instanceof CallAbort ? signal.tenant : '');

/** A call cancelled while it waited for a socket: a deadline then is local (decisions §11), anything else a cancel. */
function cancelledWhileWaiting(reason: unknown): UpstreamFailure {
  if (reason instanceof UpstreamFailure) return reason;
  const timedOut =
    typeof reason === 'object' && reason !== null && (reason as { name?: unknown }).name === 'TimeoutError';
  return timedOut
    ? new UpstreamFailure({ kind: 'timeout', local: true })
    : new UpstreamFailure({ kind: 'connection', code: 'ABORTED', message: 'request cancelled' });
}

/**
 * The sockets of one upstream pool, shared by keys (decisions §11): one key holds at most `perKey` of the
 * `capacity` at once. A call over its key's share, or while every socket is taken, waits here, in the gateway
 * (never in the provider's queue, so the wait is known to be local), until a socket of its own comes back; the
 * free sockets go round-robin to the keys that wait, each key's calls in order. Admission without a wait costs
 * two Map operations and no promise.
 */
export class SocketShares {
  private inUse = 0;
  private readonly held = new Map<string, number>();
  /** Keys with waiting calls, each its queue; a Map keeps insertion order, so a key re-added after a turn goes last. */
  private readonly waiting = new Map<string, Waiter[]>();

  constructor(
    readonly capacity: number,
    readonly perKey: number,
  ) {}

  /** `share` of `capacity` for each key: at least one socket, at most all. */
  static of(capacity: number, share: number): SocketShares {
    return new SocketShares(capacity, Math.min(capacity, Math.max(1, Math.floor(capacity * share))));
  }

  /** Takes a socket for `tenant` if one is free within its share; false: call `wait`. */
  tryTake(tenant: string): boolean {
    if (this.inUse >= this.capacity) return false;
    const held = this.held.get(tenant) ?? 0;
    if (held >= this.perKey) return false;
    this.inUse += 1;
    this.held.set(tenant, held + 1);
    return true;
  }

  /** Queues a call that `tryTake` refused: `start` once it holds a socket, or `refuse` when its signal fires first. */
  wait(tenant: string, signal: CallSignal, start: () => void, refuse: (failure: UpstreamFailure) => void): void {
    if (signal.aborted) {
      refuse(cancelledWhileWaiting(signal.reason));
      return;
    }
    const ledger = signal instanceof CallAbort ? signal : null;
    const waiter: Waiter = { tenant, signal, ledger, start, refuse, onAbort: () => this.leave(waiter) };
    if (ledger) ledger.waitingSince = Date.now();
    signal.addEventListener('abort', waiter.onAbort);
    const queue = this.waiting.get(tenant);
    if (queue) queue.push(waiter);
    else this.waiting.set(tenant, [waiter]);
  }

  /** A call of `tenant` ended: its socket goes back, to a waiting call first. */
  release(tenant: string): void {
    this.inUse -= 1;
    const held = (this.held.get(tenant) ?? 1) - 1;
    if (held > 0) this.held.set(tenant, held);
    else this.held.delete(tenant);
    if (this.waiting.size > 0) this.serveWaiting();
  }

  /** Sockets held now, and calls waiting (metrics, tests). */
  stats(): { inUse: number; waiting: number } {
    let waiting = 0;
    for (const queue of this.waiting.values()) waiting += queue.length;
    return { inUse: this.inUse, waiting };
  }

  private serveWaiting(): void {
    const started: Waiter[] = [];
    for (const [tenant, queue] of this.waiting) {
      if (this.inUse >= this.capacity) break;
      if (!this.tryTake(tenant)) continue;
      const waiter = queue.shift() as Waiter;
      // its turn taken: the key goes to the back (round-robin); a key re-added here may be served again in this pass
      this.waiting.delete(tenant);
      if (queue.length > 0) this.waiting.set(tenant, queue);
      this.settle(waiter);
      started.push(waiter);
    }
    // after the books are straight: a start may end at once and release again
    for (const waiter of started) waiter.start();
  }

  private leave(waiter: Waiter): void {
    const queue = this.waiting.get(waiter.tenant);
    const at = queue?.indexOf(waiter) ?? -1;
    if (!queue || at < 0) return;
    queue.splice(at, 1);
    if (queue.length === 0) this.waiting.delete(waiter.tenant);
    this.settle(waiter);
    waiter.refuse(cancelledWhileWaiting(waiter.signal.reason));
  }

  private settle(waiter: Waiter): void {
    waiter.signal.removeEventListener('abort', waiter.onAbort);
    const ledger = waiter.ledger;
    if (ledger && ledger.waitingSince > 0) {
      ledger.waitedMs += Date.now() - ledger.waitingSince;
      ledger.waitingSince = 0;
    }
  }
}
