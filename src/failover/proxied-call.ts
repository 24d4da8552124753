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
import type { Attempt } from './step-attempt';
import type { TraceOrigin } from '../tracing/request-trace';
import { tracing } from '../tracing/tracing';

/** nginx's status for a request whose client closed the connection first (usage records only). */
export const CLIENT_CLOSED_REQUEST = 499;

/** An upstream answer whose first chunk is in hand: from here on its provider is fixed (no failover after the first byte). */
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
 * first chunk, the x-svc-* headers on the HTTP answer, every chunk to a sink with no failover after the
 * first byte, a failure after it (the breaker learns, the sink ends the answer), and its usage recorded once:
 * 200, the error's status, 499 when the client left, 502 when the stream broke.
 */
export class ProxiedCall {
  private readonly billing: Billing = {};

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
    try {
      const value = await this.failover.execute(this.scope, model, attempt, planned);
      this.putHeaders();
      return value;
    } catch (err) {
      this.failed(err);
      throw err;
    }
  }

  /** The chain until a step's first chunk, then every chunk to `sink`; the call is recorded however it ends. */
  async stream<C, P extends Primed<C>>(
    model: string,
    attempt: Attempt<P>,
    sink: ChunkSink<C, P>,
    planned?: PlannedStep[],
  ): Promise<void> {
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
    try {
      // a write that did not have to wait returns nothing: no await (a microtask per chunk) for it
      let wait = primed.first.done ? undefined : sink.write(primed.first.value);
      if (wait) await wait;
      for (let next = await primed.rest.next(); !next.done && !this.aborted; next = await primed.rest.next()) {
        wait = sink.write(next.value);
        if (wait) await wait;
      }
      // an upstream may end early without an error when the client leaves (the offline engine does)
      if (this.aborted) return this.finish(CLIENT_CLOSED_REQUEST);
      await sink.end?.();
      this.finish(200);
    } catch (err) {
      // the client left: nobody to tell, and no fault of the provider's
      if (this.aborted) return this.finish(CLIENT_CLOSED_REQUEST);
      const reason = this.failover.streamFailed(this.scope, err);
      const status = err instanceof DomainError ? err.status : 502;
      logger.warn(
        requestFields(this.requestId),
        `${this.scope.served?.provider ?? 'the provider'}'s stream broke after the first byte (${reason}) for ${this.requestId}`,
      );
      this.finish(status);
      if (!sink.broke) throw err;
      sink.broke(reason, status, err);
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

  /** The answer was written whole by its route (a stream records itself as it ends). */
  succeeded(): void {
    this.putHeaders();
    this.finish(this.res?.statusCode ?? 200);
  }

  /** The call failed before its answer (the caller renders the error): 499 when the client had left. */
  failed(err: unknown): void {
    this.putHeaders();
    this.finish(this.aborted ? CLIENT_CLOSED_REQUEST : (toDomainError(err)?.status ?? 500));
  }

  /** The x-svc-* headers of the serving step, while the answer's headers are not sent. */
  private putHeaders(): void {
    const served = this.scope.served;
    if (!served || !this.res || this.res.headersSent) return;
    for (const [name, value] of servedHeaderPairs(served, this.scope.alertNote)) this.res.setHeader(name, value);
  }

  private finish(status: number): void {
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
  // tracing hook: the request's SERVER span, from its arrival (decisions §12)
  if (tracing.on)
    scope.trace = tracing.request(scope.requestId, key.id, capability, tracing.httpOrigin(req, res[startTime]));
  res.on('close', () => {
    if (!res.writableFinished) scope.abort();
  });
  return new ProxiedCall(failover, scope, res);
}

/** A call without an HTTP answer of its own (a stream's turn, a task's chunk): cancelled by `signal`. */
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
