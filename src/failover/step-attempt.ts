import { Logger } from '@nestjs/common';
import type { CallContext, ProviderAdapter } from '../providers/provider-adapter';
import { UpstreamFailure } from '../providers/provider-adapter';
import type { PlannedStep } from './chain';
import type { FailoverScope } from './failover-scope';
import { requestFields } from '../config/logging';
import { CallAbort } from '../common/call-signal';

/** One attempt on one step; for streams it resolves once the first chunk is in hand. */
export type Attempt<T> = (adapter: ProviderAdapter, ctx: CallContext, step: PlannedStep) => Promise<T>;

const logger = new Logger('FailoverService');

class StepTimeout extends Error {
  /**
   * `waitedMs`: of `ms`, the time the call waited for a free upstream socket in the gateway; `queued`: it was still
   * waiting when the deadline passed. Only the rest was the provider's (decisions §11).
   */
  constructor(
    readonly ms: number,
    readonly waitedMs = 0,
    readonly queued = false,
  ) {
    super(`timeout after ${ms} ms`);
    this.name = 'TimeoutError';
  }
}

/** What the provider said, for the message of a relayed client error. */
export const upstreamMessage = (err: UpstreamFailure): string =>
  (err.outcome.kind === 'http' || err.outcome.kind === 'provider_error' ? err.outcome.message : undefined) ??
  err.message;

/** A step's timeout that a local wait (the audio pool's queue) holds, and that starts whole again when the wait ends. */
class StepDeadline {
  private timer: NodeJS.Timeout | null = null;
  private held = false;
  private settled = false;
  private onTimeout: (() => void) | null = null;

  constructor(private readonly ms: number) {}

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

  settle(): void {
    this.settled = true;
    this.stop();
  }

  private start(): void {
    this.timer = setTimeout(() => this.onTimeout?.(), this.ms);
  }

  private stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

/** Runs one attempt under the step's timeout; the attempt's signal also fires when the client leaves. */
export function attemptWithTimeout<T>(
  scope: FailoverScope,
  adapter: ProviderAdapter,
  step: PlannedStep,
  attempt: Attempt<T>,
): Promise<T> {
  // not an AbortController: on Node 20 one costs about 3 µs with undici's listener on it (src/common/call-signal.ts)
  const controller = new CallAbort();
  // the key's share of the provider's sockets (src/providers/socket-shares.ts)
  controller.tenant = scope.key.id;
  // tracing hook: the running attempt's traceparent goes on its upstream request (src/providers/http.ts)
  if (scope.trace) controller.traceHeaders = scope.trace.upstreamHeaders;
  // kept after the attempt settles: a stream goes on reading through this signal after its first chunk
  scope.onAbort((reason) => controller.abort(reason));
  const deadline = new StepDeadline(step.timeoutMs);
  const ctx: CallContext = {
    model: step.model,
    signal: controller,
    requestId: scope.requestId,
    keyId: scope.key.id,
    deadline,
  };
  // a synchronous throw propagates from here as it is; one promise then settles by whichever comes
  // first (a race of two plus a finally cost three more promises per attempt)
  const pending = attempt(adapter, ctx, step);
  return new Promise<T>((resolve, reject) => {
    deadline.arm(() => {
      const error = new StepTimeout(step.timeoutMs, controller.socketWaitMs(Date.now()), controller.waitingSince > 0);
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
    });
  logger.error({ err, ...requestFields(requestId) }, 'adapter threw an unexpected error');
  return new UpstreamFailure({ kind: 'connection', message: (err as Error).message });
}
