import { Logger } from '@nestjs/common';
import { once } from 'node:events';
import { startTime } from 'pino-http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DomainError, toDomainError } from '../common/errors/domain-error';
import { requestIdOf } from '../common/http/request-id';
import { requestFields } from '../config/logging';
import type { Capability } from '../config/provider-kinds';
import type { AuthenticatedKey } from '../keys/key-directory';
import type { TokenUsage } from '../providers/provider-adapter';
import type { PlannedStep } from './chain';
import { servedHeaderPairs } from './failover-headers';
import type { FailoverScope, ScopeResult } from './failover-scope';
import type { FailoverService } from './failover.service';
import type { Attempt } from './attempt-records';
import type { TraceOrigin } from '../tracing/request-trace';
import { tracing } from '../tracing/tracing';

/** nginx's status for a request whose client closed the connection first (usage records only). */
export const CLIENT_CLOSED_REQUEST = 499;

/** An upstream answer whose first chunk is in hand: from here on its provider serves it, unless it breaks and the sink continues it. */
export interface Primed<C> {
  first: IteratorResult<C>;
  rest: AsyncIterator<C>;
}

/** Where a streamed answer goes, in whatever wire format its transport speaks. */
export interface ChunkSink<C, P extends Primed<C> = Primed<C>> {
  /** A step served: the answer's status and headers (an HTTP answer already carries the x-svc-* headers). */
  open?(primed: P): void;
  write(chunk: C): void | Promise<void>;
  /** Every chunk was written. */
  end?(): void | Promise<void>;
  /**
   * The provider failed after the first byte (`status`: what usage records): the answer must not look complete.
   * A sink without it gets the error thrown back once the call is recorded.
   */
  broke?(reason: string, status: number, err: unknown): void;
  /**
   * The provider failed after the first byte (`reason`: as the breaker learned it) and the sink may have the answer
   * continued on a later step (decisions §3): the continuing answer, primed (its chunks then go to `write`), or null
   * when no step continues it (then `broke`). Its own faults are its to catch: it resolves null on them.
   */
  continueAfter?(err: unknown, reason: string): Promise<P | null>;
}

/** What the request is billed, recorded with its usage whatever way it ends. */
export interface Billing {
  usage?: TokenUsage | null;
  characters?: number | null;
}

const logger = new Logger('ProxiedCall');

/**
 * The life of one proxied call, the same on every path (Nest routes through the FailoverInterceptor, the
 * chat fast path, the WebSocket stream's turns, async task chunks, the MiniMax- and OpenAI-shaped routes):
 * its scope (cancelled when the client leaves), the chain through the failover core until a value or a
 * first chunk, the x-svc-* headers on the HTTP answer, every chunk to a sink, a failure after the first byte (the
 * breaker learns; a sink that can continues the answer on a later step, else ends it), and its usage recorded once:
 * 200, the error's status, 499 when the client left, 502 when the stream broke.
 *
 * One owner ends it: the layer that opened it (the FailoverInterceptor for Nest routes, the chat fast path for the
 * requests it takes, `withCall` for a stream's turn or a task's chunk) calls `end` or `endWithError`, once, after
 * everything else is done; the layers in between (services, sinks) only run it. A stream's own verdict (200, 499,
 * 502) is kept for that end. A second end is a bug and throws.
 */
export class ProxiedCall {
  private readonly billing: Billing = {};
  /** A stream's verdict, kept for the owner's end: how it ended is known only here. */
  private outcome: number | null = null;
  private ended = false;
  /** The steps `stream` was given, when not the key's whole chain (a continuation walks the later ones). */
  private planned: PlannedStep[] | undefined;

  constructor(
    private readonly failover: FailoverService,
    readonly scope: FailoverScope,
    private readonly res: ServerResponse | null,
    private readonly release: () => void = () => undefined,
  ) {}

  get key(): AuthenticatedKey {
    return this.scope.key;
  }

  get requestId(): string {
    return this.scope.requestId;
  }

  get aborted(): boolean {
    return this.scope.aborted;
  }

  /** Fires when the client goes away. */
  get signal(): AbortSignal {
    return this.scope.signal;
  }

  /** Adds to what the call is billed (token usage as a stream reports it, characters of speech). */
  bill(billing: Billing): void {
    if (billing.usage !== undefined) this.billing.usage = billing.usage;
    if (billing.characters !== undefined) this.billing.characters = billing.characters;
  }

  /** The chain until a step gives a value (`planned`: only these steps); the HTTP answer gets the x-svc-* headers. */
  async run<T>(model: string, attempt: Attempt<T>, planned?: PlannedStep[]): Promise<T> {
    const value = await this.failover.execute(this.scope, model, attempt, planned);
    this.putHeaders();
    return value;
  }

  /** The chain until a step's first chunk, then every chunk to `sink`; how it ended is kept for the owner's end. */
  async stream<C, P extends Primed<C>>(
    model: string,
    attempt: Attempt<P>,
    sink: ChunkSink<C, P>,
    planned?: PlannedStep[],
  ): Promise<void> {
    this.planned = planned;
    const primed = await this.run(model, attempt, planned);
    try {
      sink.open?.(primed);
      await this.relay(primed, sink);
    } finally {
      // a stream cut short closes the provider call (and its encoder); a no-op on one that ran to its end
      await primed.rest.return?.().catch(() => undefined);
    }
  }

  private async relay<C, P extends Primed<C>>(primed: P, sink: ChunkSink<C, P>): Promise<void> {
    let current = primed;
    try {
      for (;;) {
        try {
          // a write that did not have to wait returns nothing: no await (a microtask per chunk) for it
          let wait = current.first.done ? undefined : sink.write(current.first.value);
          if (wait) await wait;
          const rest = current.rest;
          for (let next = await rest.next(); !next.done && !this.aborted; next = await rest.next()) {
            wait = sink.write(next.value);
            if (wait) await wait;
          }
          // an upstream may end early without an error when the client leaves (the offline engine does)
          if (this.aborted) return this.verdict(CLIENT_CLOSED_REQUEST);
          await sink.end?.();
          return this.verdict(200);
        } catch (err) {
          // the client left: nobody to tell, and no fault of the provider's
          if (this.aborted) return this.verdict(CLIENT_CLOSED_REQUEST);
          const reason = this.failover.streamFailed(this.scope, err);
          const status = err instanceof DomainError ? err.status : 502;
          logger.warn(
            requestFields(this.requestId),
            `${this.scope.served?.provider ?? 'the provider'}'s stream broke after the first byte (${reason}) for ${this.requestId}`,
          );
          // the gateway's own verdict (a DomainError) is not a provider's fault another step could mend
          const next =
            sink.continueAfter && !(err instanceof DomainError) ? await sink.continueAfter(err, reason) : null;
          if (this.aborted) return this.verdict(CLIENT_CLOSED_REQUEST);
          if (next) {
            await current.rest.return?.().catch(() => undefined);
            current = next;
            continue;
          }
          this.verdict(status);
          if (!sink.broke) throw err;
          return sink.broke(reason, status, err);
        }
      }
    } finally {
      // the first answer is closed by `stream`; a continuing one here, however it ended
      if (current !== primed) await current.rest.return?.().catch(() => undefined);
    }
  }

  /**
   * Continues a stream that broke after its first byte on the steps after the serving one that `canContinue`
   * admits, through the failover core (decisions §3); null when none is left or none continued it (its usage
   * record lists each attempt). `reason`: the break, the exhausted provider's reason when the first one tried serves.
   */
  async continueStream<T>(
    reason: string,
    attempt: Attempt<T>,
    canContinue: (step: PlannedStep) => boolean,
  ): Promise<T | null> {
    const served = this.scope.served;
    if (!served) return null;
    try {
      const planned = this.planned ?? this.failover.plan(this.key, this.scope.requestedModel, this.scope.capability);
      const at = planned.findIndex(
        (step) => step.level === served.level && step.provider === served.provider && step.model === served.model,
      );
      const later = planned.slice(at + 1).filter(canContinue);
      if (at < 0 || later.length === 0) return null;
      return await this.failover.continueStream(this.scope, { provider: served.provider, reason }, attempt, later);
    } catch {
      // every later step failed or was skipped (each in the usage record): the broken step stays the one that served
      this.scope.served = served;
      return null;
    }
  }

  /**
   * Waits for the HTTP answer's socket to drain after a write that filled it. A client that leaves it full for
   * `stallMs` (`SVC_HTTP_STALL_MS`, as the WebSocket's SVC_WS_STALL_MS) is dropped (decisions §11): the answer is
   * destroyed, whose close cancels the upstream call (its socket goes back to the pool) and ends this call as the
   * client's (499, never a provider failure). One timer, armed only while waiting.
   */
  drained(stallMs: number): Promise<void> {
    const res = this.res;
    if (!res) return Promise.resolve();
    const timer = setTimeout(() => {
      logger.warn(
        requestFields(this.requestId),
        `dropped the answer to ${this.requestId}: its client read nothing for ${stallMs} ms`,
      );
      res.destroy();
    }, stallMs);
    // a client that leaves (or is dropped) ends the wait through the call's signal
    return once(res, 'drain', { signal: this.signal }).then(
      () => clearTimeout(timer),
      (err: unknown) => {
        clearTimeout(timer);
        throw err;
      },
    );
  }

  /**
   * The owner's end of a call whose route returned (its answer written whole, or a stream that kept its verdict):
   * its usage recorded, once.
   */
  end(): void {
    if (this.outcome !== null) return this.finish(this.outcome);
    this.putHeaders();
    this.finish(this.res?.statusCode ?? 200);
  }

  /**
   * The owner's end of a call whose route threw (the owner renders the error): the error's status, 499 when the
   * client had left, or the verdict of a stream that broke.
   */
  endWithError(err: unknown): void {
    if (this.outcome !== null) return this.finish(this.outcome);
    this.putHeaders();
    this.finish(this.aborted ? CLIENT_CLOSED_REQUEST : (toDomainError(err)?.status ?? 500));
  }

  /** How a stream ended, for the owner's end (the first verdict holds: a continuation's faults are caught inside). */
  private verdict(status: number): void {
    this.outcome ??= status;
  }

  /** The x-svc-* headers of the serving step, while the answer's headers are not sent. */
  private putHeaders(): void {
    const served = this.scope.served;
    if (!served || !this.res || this.res.headersSent) return;
    for (const [name, value] of servedHeaderPairs(served, this.scope.alertNote)) this.res.setHeader(name, value);
  }

  private finish(status: number): void {
    if (this.ended)
      throw new Error(`the call ${this.requestId} was ended twice: only the layer that opened it ends it`);
    this.ended = true;
    const result: ScopeResult = { status, ...this.billing };
    this.scope.finish(result);
    this.release();
  }
}

/** A call of an HTTP request: cancelled when the connection closes before the answer ends. */
export function openHttpCall(
  failover: FailoverService,
  req: IncomingMessage,
  res: ServerResponse,
  key: AuthenticatedKey,
  capability: Capability,
): ProxiedCall {
  const scope = failover.openScope(requestIdOf(req), key, capability);
  // tracing hook: the request's SERVER span, from its arrival, named by the answer's traceresponse (decisions §12)
  if (tracing.on)
    scope.trace = tracing.request(scope.requestId, key.id, capability, tracing.httpOrigin(req, res[startTime], res));
  res.on('close', () => {
    if (!res.writableFinished) scope.abort();
  });
  return new ProxiedCall(failover, scope, res);
}

/** Runs `body` on `call`, which the caller opened, and ends the call once however `body` ends (its one owner). */
export async function withCall<T>(call: ProxiedCall, body: (call: ProxiedCall) => Promise<T>): Promise<T> {
  let value: T;
  try {
    value = await body(call);
  } catch (err) {
    call.endWithError(err);
    throw err;
  }
  call.end();
  return value;
}

/** A call without an HTTP answer of its own (a stream's turn, a task's chunk): cancelled by `signal`; see `withCall`. */
export function openCall(
  failover: FailoverService,
  requestId: string,
  key: AuthenticatedKey,
  capability: Capability,
  signal: AbortSignal,
  traceOrigin: TraceOrigin | null = null,
): ProxiedCall {
  const scope = failover.openScope(requestId, key, capability);
  // tracing hook: a turn's or a chunk's SERVER span (`traceOrigin` is null while traces are off)
  if (traceOrigin) scope.trace = tracing.request(requestId, key.id, capability, traceOrigin);
  const abort = (): void => scope.abort();
  if (signal.aborted) abort();
  else signal.addEventListener('abort', abort, { once: true });
  return new ProxiedCall(failover, scope, null, () => signal.removeEventListener('abort', abort));
}
