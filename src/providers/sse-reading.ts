import type { Dispatcher } from 'undici';
import { CallAbort, type CallSignal } from '../common/call-signal';
import { UpstreamFailure } from './provider-adapter';
import { SseEvent, SseParser } from './sse';
import { headerValue, SignalledDispatch, TextReading } from './text-reading';
import { toUpstreamFailure } from './upstream-errors';
import { streamTooLong, type SseReadingOptions, type StreamStep } from './sse-reading-options';

export { streamTooLong, type SseReadingOptions, type StreamStep } from './sse-reading-options';

/** Chunks translated but not yet taken before the upstream's reads are paused (back-pressure). */
const QUEUE_HIGH = 64;

type Controller = Dispatcher.DispatchController;
type ResponseHeaders = Record<string, string | string[] | undefined>;

/** Whether undici's response headers declare a JSON body. */
const declaresJson = (headers: ResponseHeaders): boolean =>
  headerValue(headers, 'content-type')?.toLowerCase().includes('application/json') ?? false;

/**
 * One streamed upstream call as an undici dispatch handler and the async iterator of its translated chunks:
 * each network read is parsed and translated as it arrives, with no response stream, headers object or
 * promise per read. `opened` is called with the iterator when a 2xx's headers arrive; `refused` with the
 * UpstreamFailure of anything else (another status with the upstream's message, a transport fault, a cancel).
 *
 * The iterator hands out the chunks in order, then ends at the translator's end marker, or fails: with what the
 * translator or the line cap threw (after the chunks before it), STREAM_TRUNCATED when the body ends without
 * the marker, or the transport fault. After the marker the rest of the body is drained so the socket is
 * reused; a consumer that stops early (`return`), a fault or the call's signal drop the socket instead.
 * Translated chunks not yet taken past QUEUE_HIGH pause the upstream's reads until they are. With
 * `wholeJsonCap`, a 2xx JSON answer is one event (see SseReadingOptions).
 */
export class SseReading<T> extends SignalledDispatch implements Dispatcher.DispatchHandler, AsyncIterableIterator<T> {
  /** The controller a paused body is resumed through; kept after `settle` (which drops the one aborts go through). */
  private flow: Controller | null = null;
  private paused = false;
  /** A non-2xx answer's body, read for its message; or a 2xx JSON answer's, read whole (wholeJsonCap). */
  private errorBody: TextReading | null = null;
  private wholeBody: TextReading | null = null;
  private readonly parser: SseParser;
  private queue: T[] = [];
  private head = 0;
  /** open: chunks still to come; ended: the end marker came (the body is drained); failed / closed: nothing more. */
  private state: 'headers' | 'open' | 'ended' | 'failed' | 'closed' = 'headers';
  private failure: Error | null = null;
  private drained = 0;
  private drainTimer: NodeJS.Timeout | null = null;
  private totalTimer: NodeJS.Timeout | null = null;
  /** A step's idle bound shorter than undici's body timeout (that also covers the first-token wait), kept here; 0: none. */
  private readonly idleMs: number;
  private idleTimer: NodeJS.Timeout | null = null;
  private waiting: { resolve: (r: IteratorResult<T>) => void; reject: (err: Error) => void } | null = null;

  constructor(
    signal: CallSignal,
    private readonly translate: (event: SseEvent) => StreamStep<T>,
    private readonly options: SseReadingOptions,
    private readonly opened: (chunks: SseReading<T>) => void,
    private readonly refused: (err: unknown) => void,
  ) {
    super(signal);
    this.parser = new SseParser(options.maxLineChars);
    this.idleMs =
      signal instanceof CallAbort && signal.streamIdleMs > 0 && signal.streamIdleMs < signal.bodyTimeoutMs
        ? signal.streamIdleMs
        : 0;
  }

  // ---- the upstream side (undici's dispatch handler) ----

  onResponseStart(controller: Controller, statusCode: number, headers: ResponseHeaders): void {
    if (statusCode < 200) return; // 1xx: the answer is still to come
    if (statusCode >= 300) {
      // the error body is read for its message as a JSON call's is; the call is refused with it
      this.detach();
      this.state = 'closed';
      this.errorBody = new TextReading(this.signal, 0, () => undefined, this.refused);
      if (this.controller) this.errorBody.onRequestStart(this.controller);
      return this.errorBody.onResponseStart(controller, statusCode, headers);
    }
    this.flow = controller;
    this.state = 'open';
    // the step's deadline moves on to the first data event (decisions §3)
    if (this.signal instanceof CallAbort) this.signal.phases?.headersReceived();
    // one timer for the whole body, none per read: an upstream that drip-feeds under the idle bound is still cut
    if (this.options.totalTimeoutMs !== undefined)
      this.totalTimer = setTimeout(this.tooLong, this.options.totalTimeoutMs);
    if (this.options.wholeJsonCap !== undefined && declaresJson(headers)) this.readWhole(this.options.wholeJsonCap);
    this.opened(this);
    this.wholeBody?.onResponseStart(controller, statusCode, headers);
  }

  /**
   * A 2xx JSON answer: the body is read whole by a TextReading (its cap; the call's signal now cancels through
   * it), then translated. This reading keeps the connection's abort, so a consumer that leaves still cuts it.
   */
  private readWhole(cap: number): void {
    this.detach();
    const done = (failure: Error | null): void => {
      if (this.state === 'open') {
        if (failure) {
          this.state = 'failed';
          this.failure = failure;
        } else this.state = 'ended'; // the whole answer: no end marker to wait for
      } else if (this.state !== 'ended') return; // the consumer left
      this.settle(); // the body is all read: nothing to drain
      this.wake();
    };
    this.wholeBody = new TextReading(
      this.signal,
      cap,
      (text) => {
        try {
          this.take([{ event: 'message', data: text }]);
        } catch (err) {
          return done(toUpstreamFailure(err, this.signal));
        }
        done(null);
      },
      (err) => done(err instanceof Error ? err : new Error(String(err))),
    );
    if (this.controller) this.wholeBody.onRequestStart(this.controller);
  }

  onResponseData(controller: Controller, chunk: Buffer): void {
    if (this.errorBody) return this.errorBody.onResponseData(controller, chunk);
    if (this.wholeBody) return this.wholeBody.onResponseData(controller, chunk);
    if (this.state === 'ended') {
      this.drained += chunk.length;
      if (this.drained > this.options.drainLimit) this.drop(new Error('the rest of the stream is not worth reading'));
      return;
    }
    if (this.state !== 'open') return;
    try {
      this.take(this.parser.push(chunk));
    } catch (err) {
      this.fail(toUpstreamFailure(err, this.signal));
    }
    this.wake();
    if (this.state === 'open' && this.queue.length - this.head >= QUEUE_HIGH) {
      this.paused = true;
      controller.pause(); // undici reads no more until `ready` resumes it
    }
    if (this.idleMs > 0) this.watchIdle();
  }

  onResponseEnd(controller: Controller, trailers: ResponseHeaders): void {
    this.ended();
    if (this.errorBody) return this.errorBody.onResponseEnd(controller, trailers);
    if (this.wholeBody) return this.wholeBody.onResponseEnd(controller, trailers);
    if (this.state === 'open') {
      try {
        this.take(this.parser.rest());
      } catch (err) {
        this.fail(toUpstreamFailure(err, this.signal));
      }
      if (this.state === 'open' && this.options.complete?.()) this.state = 'ended';
      if (this.state === 'open')
        this.fail(
          new UpstreamFailure({
            kind: 'connection',
            code: 'STREAM_TRUNCATED',
            message: 'upstream stream ended before its end marker',
          }),
        );
    }
    this.settle();
    this.wake();
  }

  /** Also called with no controller: by undici for a call it never sent, by the client for one refused a socket. */
  onResponseError(controller: Controller | null | undefined, err: Error): void {
    this.ended();
    if (this.errorBody) return this.errorBody.onResponseError(controller, err);
    if (this.wholeBody) return this.wholeBody.onResponseError(controller, err);
    if (this.state === 'headers') {
      this.settle();
      this.refused(toUpstreamFailure(err, this.signal));
      return;
    }
    // after the end marker a fault only costs the socket; a consumer that left has nothing to hear
    if (this.state === 'open') this.fail(toUpstreamFailure(err, this.signal));
    this.settle();
    this.wake();
  }

  /** Translates a read's events into the queue, up to the end marker. */
  private take(events: SseEvent[]): void {
    for (const event of events) {
      const step = this.translate(event);
      if (step === 'end') {
        this.state = 'ended';
        // the body usually ends in the same read: a timer only for one that does not
        process.nextTick(this.startDrainTimer);
        return;
      }
      if (step !== undefined) this.queue.push(step);
    }
  }

  private readonly startDrainTimer = (): void => {
    if (this.state !== 'ended' || this.controller === null) return;
    this.drainTimer = setTimeout(
      () => this.drop(new Error('the rest of the stream took too long')),
      this.options.drainTimeoutMs,
    );
  };

  /** Restarts the idle bound after a read; none while the body is held back or over. */
  private watchIdle(): void {
    if (this.state !== 'open' || this.paused) {
      if (this.idleTimer) clearTimeout(this.idleTimer);
      this.idleTimer = null;
    } else if (this.idleTimer) this.idleTimer.refresh();
    else this.idleTimer = setTimeout(this.idle, this.idleMs);
  }

  private readonly idle = (): void => {
    this.idleTimer = null;
    if (this.state === 'open' && !this.paused)
      this.fail(
        new UpstreamFailure({
          kind: 'connection',
          code: 'STREAM_IDLE',
          message: 'the upstream sent nothing within its stream idle timeout',
        }),
      );
    this.wake();
  };

  /** The body ran past its total bound: a provider fault (decisions §3), handed out after the chunks before it. */
  private readonly tooLong = (): void => {
    this.totalTimer = null;
    const failure = streamTooLong(this.options.totalTimeoutMs ?? 0);
    if (this.state === 'open' && !this.wholeBody) this.fail(failure);
    else this.drop(failure); // a whole JSON answer fails through its reading; a drain is only cut short
  };

  /** A fault: handed out after the chunks before it; the socket is dropped. */
  private fail(failure: Error): void {
    this.state = 'failed';
    this.failure = failure;
    this.drop(failure);
  }

  /** Cuts the connection (once); the dispatch then ends with onResponseError, which finds nothing left to do. */
  private drop(reason: Error): void {
    const controller = this.controller;
    this.settle();
    controller?.abort(reason);
  }

  /** The call is over on the upstream side: no more cancels or timers. */
  private settle(): void {
    if (this.controller === null && this.drainTimer === null && this.totalTimer === null && this.idleTimer === null)
      return;
    this.controller = null;
    this.detach();
    if (this.drainTimer) clearTimeout(this.drainTimer);
    this.drainTimer = null;
    if (this.totalTimer) clearTimeout(this.totalTimer);
    this.totalTimer = null;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }

  // ---- the consumer side (the async iterator) ----

  next(): Promise<IteratorResult<T>> {
    if (this.waiting) return Promise.reject(new Error('SseReading: next() called while a read is pending'));
    const result = this.ready();
    if (result instanceof Error) return Promise.reject(result);
    if (result !== null) return Promise.resolve(result);
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  return(): Promise<IteratorResult<T>> {
    this.queue = [];
    this.head = 0;
    // after the end marker the body is still drained for the socket's reuse; before it, the socket is dropped
    if (this.state === 'open' || this.state === 'headers') this.drop(new Error('stream closed by its consumer'));
    if (this.state !== 'ended') this.state = 'closed';
    this.failure = null;
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.resolve({ done: true, value: undefined });
    return Promise.resolve({ done: true, value: undefined });
  }

  [Symbol.asyncIterator](): SseReading<T> {
    return this;
  }

  /** The next result if there is one now (a chunk, the fault or the end); null while the upstream is awaited. */
  private ready(): IteratorResult<T> | Error | null {
    if (this.head < this.queue.length) {
      const value = this.queue[this.head];
      this.head += 1;
      if (this.head === this.queue.length) {
        this.queue = [];
        this.head = 0;
        if (this.paused) {
          this.paused = false;
          if (this.idleMs > 0) this.watchIdle();
          this.flow?.resume();
        }
      }
      return { done: false, value };
    }
    if (this.state === 'open' || this.state === 'headers') return null;
    if (this.failure !== null) {
      const failure = this.failure;
      this.failure = null;
      this.state = 'closed';
      return failure;
    }
    return { done: true, value: undefined };
  }

  private wake(): void {
    const waiting = this.waiting;
    if (!waiting) return;
    const result = this.ready();
    if (result === null) return;
    this.waiting = null;
    if (result instanceof Error) waiting.reject(result);
    else waiting.resolve(result);
  }
}
