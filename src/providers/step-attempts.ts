import { Logger } from '@nestjs/common';
import type { CallContext, ProviderAdapter, StepPhases } from './provider-adapter';
import { UpstreamFailure } from './provider-adapter';
import { requestFields } from '../config/logging';
import { CallAbort } from '../common/call-signal';
import { retryWait, type RetryRule } from './attempt-policy';

/*
 * The attempts of one chain step, the half of the upstream executor above the transport (upstream-executor.ts):
 * each attempt's deadline in its two phases, the bounds it hands the transport, what any failure becomes, and the
 * retries the step's conduct allows (attempt-policy.ts), with their waits. It is the same for every kind of
 * provider (HTTP, the Realtime WebSocket, the local engine): the failover core only walks the steps and hears, through
 * a StepListener, of each attempt, and keeps the records, the breaker and the alerts.
 */

/** A step's conduct settings (decisions §3), resolved from the step, its provider and the defaults. */
export interface StepConduct extends RetryRule {
  model: string;
  /** To a stream's headers (a whole answer otherwise). */
  timeoutMs: number;
  /** From a stream's headers to its first data event. */
  firstTokenTimeoutMs: number;
  /** The longest silence between a stream's events once it has begun. */
  streamIdleTimeoutMs: number;
}

/** The request an attempt works for, as the executor needs it (the failover core's scope is one). */
export interface AttemptOwner {
  readonly requestId: string;
  readonly key: { readonly id: string };
  /** The request's spans: their `traceparent` goes on each upstream request; null while traces are off. */
  readonly trace: { readonly upstreamHeaders: Record<string, string> | null } | null;
  /** The client has left. */
  readonly aborted: boolean;
  /** Calls `listener` when the client leaves (at once if it has); returns the undo. */
  onAbort(listener: (reason: Error) => void): () => void;
}

/** One attempt on one step; for streams it resolves once the first chunk is in hand. */
export type StepAttempt<T, S extends StepConduct = StepConduct> = (
  adapter: ProviderAdapter,
  ctx: CallContext,
  step: S,
) => Promise<T>;

const logger = new Logger('FailoverService');

class StepTimeout extends Error {
  /**
   * `waitedMs`: of `ms`, the time the call waited for a free upstream socket in the gateway; `queued`: it was still
   * waiting when the deadline passed. Only the rest was the provider's (decisions §11). `phase`: the deadline that
   * passed, `first_token` once a stream's headers came.
   */
  constructor(
    readonly ms: number,
    readonly waitedMs = 0,
    readonly queued = false,
    readonly phase: 'headers' | 'first_token' = 'headers',
  ) {
    super(`${phase === 'first_token' ? 'first token ' : ''}timeout after ${ms} ms`);
    this.name = 'TimeoutError';
  }
}

/**
 * A step's deadline in two phases (decisions §3): `timeout_ms` to a stream's headers (a whole answer otherwise), then
 * `first_token_timeout_ms` from the headers to the first data event. A local wait (the audio pool's queue) holds it,
 * and the phase's timeout starts whole again when the wait ends.
 *
 * One timer, armed for the shorter of the two phases, checks the phase when it fires and waits on for what is left of
 * it (before the headers, at most a first-token timeout at a time): the headers move no timer (a timer cleared and set
 * again there cost about 10 % of one-step streaming throughput at c=20, bench:chat-ab).
 */
export class StepDeadline implements StepPhases {
  private timer: NodeJS.Timeout | null = null;
  private held = false;
  private settled = false;
  private onTimeout: (() => void) | null = null;
  phase: 'headers' | 'first_token' = 'headers';
  /** The running phase's timeout (what a timeout names). */
  ms: number;
  /** When the running phase's timeout began (its start, the headers, or the end of a wait). */
  private since = 0;

  /** `trace`: what the attempt showed, told here that the headers came (the retry rule reads it). */
  constructor(
    timeoutMs: number,
    private readonly firstTokenMs = timeoutMs,
    private readonly trace: AttemptTrace | null = null,
  ) {
    this.ms = timeoutMs;
  }

  /** A stream's headers came: the first-token deadline runs from now (once). */
  headersReceived(): void {
    if (this.trace) this.trace.afterHeaders = true;
    if (this.phase === 'first_token' || this.settled) return;
    this.phase = 'first_token';
    this.ms = this.firstTokenMs;
    this.since = Date.now();
  }

  /** Runs the timer (unless a wait holds it); `onTimeout` fires once when it ends. */
  arm(onTimeout: () => void): void {
    this.onTimeout = onTimeout;
    if (!this.held) this.start();
  }

  hold(): void {
    this.held = true;
    this.stop();
  }

  restart(): void {
    this.held = false;
    this.stop();
    if (this.onTimeout && !this.settled) this.start();
  }

  /** The attempt is over: no timer, and nothing of the attempt is held (the signal keeps this deadline while a stream reads). */
  settle(): void {
    this.settled = true;
    this.onTimeout = null;
    this.stop();
  }

  private start(): void {
    this.since = Date.now();
    this.timer = setTimeout(this.fire, Math.min(this.ms, this.firstTokenMs));
  }

  private readonly fire = (): void => {
    this.timer = null;
    if (this.settled || this.held) return;
    const left = this.since + this.ms - Date.now();
    if (left <= 0) return this.onTimeout?.();
    // still before the headers, which may come at any moment: look again at least each first-token timeout, so that
    // the first-token deadline (headers + that) is never overslept
    this.timer = setTimeout(this.fire, this.phase === 'headers' ? Math.min(left, this.firstTokenMs) : left);
  };

  private stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

/** What one attempt showed besides its result: whether a stream's headers came (the retry rule reads it). */
export interface AttemptTrace {
  afterHeaders: boolean;
}

/** Runs one attempt under the step's deadline; the attempt's signal also fires when the client leaves. */
export function runAttempt<T, S extends StepConduct>(
  owner: AttemptOwner,
  adapter: ProviderAdapter,
  step: S,
  attempt: StepAttempt<T, S>,
  trace?: AttemptTrace,
): Promise<T> {
  // not an AbortController: on Node 20 one costs about 3 µs with undici's listener on it (src/common/call-signal.ts)
  const controller = new CallAbort();
  // the key's share of the provider's sockets (src/providers/socket-shares.ts)
  controller.tenant = owner.key.id;
  // tracing hook: the running attempt's traceparent goes on its upstream request (src/providers/http.ts)
  if (owner.trace) controller.traceHeaders = owner.trace.upstreamHeaders;
  // kept after the attempt settles: a stream goes on reading through this signal after its first chunk
  owner.onAbort((reason) => controller.abort(reason));
  const deadline = new StepDeadline(step.timeoutMs, step.firstTokenTimeoutMs, trace ?? null);
  // the upstream client moves the deadline on at a stream's headers and bounds its silences (decisions §3)
  controller.phases = deadline;
  // undici's timer bounds the body's silences, the wait for the first data event included
  controller.bodyTimeoutMs = Math.max(step.streamIdleTimeoutMs, step.firstTokenTimeoutMs);
  // ... and a stream's reading then keeps the shorter idle bound itself once data flows (SseReading)
  controller.streamIdleMs = step.streamIdleTimeoutMs;
  const ctx: CallContext = {
    model: step.model,
    signal: controller,
    requestId: owner.requestId,
    keyId: owner.key.id,
    deadline,
  };
  // a synchronous throw propagates from here as it is; one promise then settles by whichever comes
  // first (a race of two plus a finally cost three more promises per attempt)
  const pending = attempt(adapter, ctx, step);
  return new Promise<T>((resolve, reject) => {
    deadline.arm(() => {
      const error = new StepTimeout(
        deadline.ms,
        // a wait for a socket ends before any headers: none of the first-token phase was local
        deadline.phase === 'first_token' ? 0 : controller.socketWaitMs(Date.now()),
        controller.waitingSince > 0,
        deadline.phase,
      );
      controller.abort(error);
      reject(error);
    });
    pending.then(
      (value) => {
        deadline.settle();
        resolve(value);
      },
      // passed on as thrown: toFailure classifies whatever an adapter rejects with
      (err: Error) => {
        deadline.settle();
        reject(err);
      },
    );
  });
}

/** Whatever an attempt threw (for request `requestId`), as the upstream failure the chain classifies (a step timeout is a timeout). */
export function toFailure(err: unknown, requestId: string): UpstreamFailure {
  if (err instanceof UpstreamFailure) return err;
  if (err instanceof StepTimeout)
    return new UpstreamFailure({
      kind: 'timeout',
      afterMs: err.ms - err.waitedMs,
      ...(err.queued ? { local: true } : {}),
      ...(err.phase === 'first_token' ? { phase: 'first_token' as const } : {}),
    });
  logger.error({ err, ...requestFields(requestId) }, 'adapter threw an unexpected error');
  return new UpstreamFailure({ kind: 'connection', message: (err as Error).message });
}

/** What the failover core hears of a step's attempts, and its say in them. */
export interface StepListener<T> {
  /** Before each attempt; `number` is 1 for the step's first. */
  attempting(number: number): void;
  /** The attempt served `value`; what this returns (a failover event's store) is awaited before the step returns. */
  served(value: T, number: number): Promise<void> | null;
  /**
   * A failed attempt: throws to end the request (the client left, the gateway's own verdict, the client's error), else
   * returns the failure (toFailure) the retry rule reads and the reason the log gives.
   */
  failed(err: unknown, number: number): { failure: UpstreamFailure; reason: string };
  /** Whether to try the step again after `waitMs` (null: the retry rule says no). */
  again(waitMs: number | null, reason: string): boolean;
}

/** What `runStep` returns when the step failed and the next one is to be tried. */
export const NEXT_STEP: unique symbol = Symbol('next step');

/** Waits `ms` unless the client leaves first; resolves false then (nobody waits for another attempt). */
function waitUnlessGone(owner: AttemptOwner, ms: number): Promise<boolean> {
  if (owner.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => {
      undo();
      resolve(true);
    }, ms);
    const undo = owner.onAbort(() => {
      clearTimeout(timer);
      resolve(false);
    });
  });
}

/**
 * A step's attempts: the first, then one after each transient fault while its retries last (decisions §3), each under
 * its deadline. Resolves with what an attempt served, or NEXT_STEP once the step is given up.
 */
export async function runStep<T, S extends StepConduct>(
  owner: AttemptOwner,
  adapter: ProviderAdapter,
  step: S,
  attempt: StepAttempt<T, S>,
  listener: StepListener<T>,
): Promise<T | typeof NEXT_STEP> {
  for (let number = 1; ; number++) {
    const trace: AttemptTrace = { afterHeaders: false };
    listener.attempting(number);
    let value: T;
    try {
      value = await runAttempt(owner, adapter, step, attempt, trace);
    } catch (err) {
      const { failure, reason } = listener.failed(err, number);
      const wait = retryWait(failure.outcome, { number, afterHeaders: trace.afterHeaders }, step);
      if (!listener.again(wait, reason) || wait === null) return NEXT_STEP;
      if (!(await waitUnlessGone(owner, wait))) throw err;
      continue;
    }
    const announced = listener.served(value, number);
    if (announced) await announced;
    return value;
  }
}
