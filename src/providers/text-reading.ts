import type { Dispatcher } from 'undici';
import type { CallSignal } from '../common/call-signal';
import type { SocketShares } from './socket-shares';
import { UpstreamFailure } from './provider-adapter';
import { tooLarge } from './sse';
import { ERROR_BODY_CAP, httpFailure, toUpstreamFailure } from './upstream-errors';

type Controller = Dispatcher.DispatchController;
type ResponseHeaders = Record<string, string | string[] | undefined>;

/** The first value of header `name` (lower case) among undici's parsed response headers. */
export function headerValue(headers: ResponseHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The declared length among undici's response headers, or NaN. */
const declaredLength = (headers: ResponseHeaders): number =>
  Number(headerValue(headers, 'content-length') ?? Number.NaN);

/**
 * The cancel of a dispatched call: undici's controller, aborted when the call's signal fires (or at once, for
 * a signal that fired before the call was sent). `detach` when the call no longer needs it. Handlers use
 * undici 7's onRequestStart/onResponse* API; Pool.dispatch wraps them in its UnwrapHandler.
 */
export abstract class SignalledDispatch {
  protected controller: Controller | null = null;
  /** The socket share this dispatch holds, given back once when it ends (completed or failed); no closure per call. */
  private shares: SocketShares | null = null;
  private tenant = '';
  private readonly onAbort = (): void => {
    this.controller?.abort(abortReason(this.signal.reason));
  };

  protected constructor(protected readonly signal: CallSignal) {}

  onRequestStart(controller: Controller, _context?: unknown): void {
    if (this.signal.aborted) {
      controller.abort(abortReason(this.signal.reason));
      return;
    }
    this.controller = controller;
    this.signal.addEventListener('abort', this.onAbort);
  }

  protected detach(): void {
    this.signal.removeEventListener('abort', this.onAbort);
  }

  /** This dispatch holds a socket of `tenant`'s share: it goes back once undici ends it (onResponseEnd or onResponseError). */
  holdSocket(shares: SocketShares, tenant: string): void {
    this.shares = shares;
    this.tenant = tenant;
  }

  protected ended(): void {
    const shares = this.shares;
    if (shares === null) return;
    this.shares = null;
    shares.release(this.tenant);
  }
}

/**
 * One call of `UpstreamClient.text` as an undici dispatch handler: the body's chunks kept up to the cap (a 2xx's
 * `cap`, an error's ERROR_BODY_CAP), the call's signal cancelling it, settled once.
 */
export class TextReading extends SignalledDispatch implements Dispatcher.DispatchHandler {
  private status = 0;
  private readonly parts: Buffer[] = [];
  private size = 0;
  private limit = 0;
  private settled = false;
  /** A refusal's `Retry-After`, as the upstream wrote it. */
  private retryAfter: string | undefined;

  constructor(
    signal: CallSignal,
    private readonly cap: number,
    private readonly resolve: (text: string) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    super(signal);
  }

  onResponseStart(_controller: Controller, statusCode: number, headers: ResponseHeaders): void {
    if (statusCode < 200) return; // 1xx: the answer is still to come
    this.status = statusCode;
    if (statusCode >= 300) {
      this.limit = ERROR_BODY_CAP;
      this.retryAfter = headerValue(headers, 'retry-after');
      return;
    }
    this.limit = this.cap;
    if (declaredLength(headers) > this.cap) this.fail(tooLarge('JSON reply', this.cap));
  }

  onResponseData(_controller: Controller, chunk: Buffer): void {
    if (this.settled) return;
    const room = this.limit - this.size;
    if (chunk.length <= room) {
      this.parts.push(chunk);
      this.size += chunk.length;
      return;
    }
    if (this.status >= 300) {
      // an error body is only read for its message: what fits is enough, the rest of the socket is not worth keeping
      this.parts.push(chunk.subarray(0, room));
      this.size = this.limit;
      this.refuse();
    } else this.fail(tooLarge('JSON reply', this.cap));
  }

  onResponseEnd(_controller: Controller, _trailers?: ResponseHeaders): void {
    this.ended();
    if (this.status >= 300) this.refuse();
    else this.finish(() => this.resolve(this.bodyText()));
  }

  /** Also called with no controller: by undici for a call it never sent, by the client for one refused a socket. */
  onResponseError(_controller: Controller | null | undefined, err: Error): void {
    this.ended();
    this.finish(() => this.reject(toUpstreamFailure(err, this.signal)));
  }

  private bodyText(): string {
    return (this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts)).toString('utf8');
  }

  /** A non-2xx answer: its status and the upstream's own message; the socket is dropped when the body was cut. */
  private refuse(): void {
    const cut = this.size >= this.limit;
    const failure = httpFailure(this.status, this.bodyText(), this.retryAfter);
    this.finish(() => this.reject(failure));
    if (cut) this.controller?.abort(new Error('error body cut at its cap'));
  }

  private fail(failure: UpstreamFailure): void {
    this.finish(() => this.reject(failure));
    this.controller?.abort(failure);
  }

  private finish(settle: () => void): void {
    if (this.settled) return;
    this.settled = true;
    this.detach();
    settle();
  }
}

/** What an aborted call's connection is cut with: the signal's reason when it is an error. */
export const abortReason = (reason: unknown): Error =>
  reason instanceof Error ? reason : new Error('request cancelled');
