/**
 * What an upstream call is cancelled through: the part of an AbortSignal that undici (it takes any object
 * with `addEventListener`), the adapters and the audio pool read. An AbortSignal is one; so is CallAbort.
 */
export interface CallSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** What hears that a stream's headers came (a step's deadline). */
export interface HeadersListener {
  headersReceived(): void;
}

/**
 * A cancel source for one attempt, in place of an AbortController: on Node 20 making an AbortController
 * costs about 2 µs and each listener on its signal about 1 µs more (EventTarget), paid by every proxied
 * request; this is a flag and an array. Listeners run once, in the order added, when `abort` is first called;
 * one added after that is never called (as with an AbortSignal: check `aborted` first).
 */
export class CallAbort implements CallSignal {
  aborted = false;
  reason: unknown = undefined;
  /**
   * Noted by the upstream client (decisions §11): whose socket share the call uses (the key's id), and its wait
   * for a free upstream socket in the gateway, `waitingSince` while it waits (0 otherwise) and `waitedMs` before:
   * a deadline that passes then is local time, never the provider's.
   */
  tenant = '';
  waitingSince = 0;
  waitedMs = 0;
  /** W3C trace headers (`traceparent`) of the attempt's span, sent with its upstream request; null while traces are off. */
  traceHeaders: Record<string, string> | null = null;
  /**
   * Set by the failover core for the upstream client (decisions §3): the step's deadline, told when a stream's 2xx
   * headers arrive (it moves on to the first token); the step's `stream_idle_timeout_ms`; and the bound of an SSE
   * body's silences in undici (the longer of that and the first-token deadline, which it also covers).
   *
   * The deadline itself, not a closure: a closure made in the attempt would tie this signal to the attempt's whole
   * scope, and V8 then kept every streamed request's objects past two scavenges into the old generation (a full
   * collection every 0.7 s at c=20; streaming at 80 % of the build before: docs/performance.md).
   */
  phases: HeadersListener | null = null;
  bodyTimeoutMs = 0;
  streamIdleMs = 0;
  private listeners: Array<() => void> | null = null;

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return;
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const at = this.listeners?.indexOf(listener) ?? -1;
    if (at >= 0) this.listeners?.splice(at, 1);
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners ?? [];
    this.listeners = null;
    for (const listener of listeners) listener();
  }

  /** The time this call has spent waiting for a free upstream socket, up to `now`. */
  socketWaitMs(now: number): number {
    return this.waitedMs + (this.waitingSince > 0 ? now - this.waitingSince : 0);
  }
}

/**
 * The W3C trace headers of the attempt `signal` belongs to (decisions §12): a failover attempt's CallAbort while traces
 * are on; null otherwise (traces off, or a signal of no attempt), and then nothing is sent.
 */
export function traceHeadersOf(signal: CallSignal): Record<string, string> | null {
  return signal instanceof CallAbort ? signal.traceHeaders : null;
}
