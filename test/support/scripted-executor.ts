import type { CallSignal } from '../../src/common/call-signal';
import { UpstreamFailure } from '../../src/providers/provider-adapter';
import type { SseEvent } from '../../src/providers/sse';
import type { StreamStep } from '../../src/providers/sse-reading-options';
import { abortFailure, httpFailure, toUpstreamFailure } from '../../src/providers/upstream-errors';
import { parseJsonBody } from '../../src/providers/http';
import type {
  EventReadingOptions,
  UpstreamCall,
  UpstreamExecutor,
  UpstreamSocket,
  UpstreamSocketCall,
} from '../../src/providers/upstream-executor';

/**
 * An UpstreamExecutor for adapter unit tests: no server. It records every call and answers with what the test
 * scripted, keeping the executor's contract (UpstreamExecutor; the HTTP one is tested against real servers in
 * src/providers/http*.spec.ts, sse-reading.spec.ts, upstream-client-shares.spec.ts, upstream-socket.spec.ts): a
 * JSON reply is parsed as the real one parses it, SSE events go through the adapter's own translate step, one by
 * one as the consumer reads, a call whose signal fired fails as its reason says, a stream's consumer that leaves
 * early is noted, and a socket's other side is a scripted peer.
 */

/** What the upstream answers one call with. */
export type Answer =
  /** A 2xx body: `text` and `json` give it whole (`json` parses it as the real executor does); `check` ignores it. */
  | { text: string }
  | { json: unknown }
  /**
   * A 2xx event stream: each entry is an event (a string is the data of a `message` event), translated as read;
   * `then` is a transport fault after them (a cut connection); without it the body ends cleanly there.
   */
  | { events: Array<string | SseEvent>; then?: UpstreamFailure }
  /** A 2xx JSON answer to a stream request (MiniMax's errors): one event, read whole only with `wholeJsonCap`. */
  | { wholeJson: unknown }
  /** A 2xx body relayed as these chunks, `gapMs` apart (as a slow upstream sends them); `then` is a fault after them. */
  | { chunks: Buffer[]; then?: UpstreamFailure; gapMs?: number }
  /** Refused before any 2xx: a status (see `refusal`), a refused connection, a timeout. */
  | { fail: UpstreamFailure }
  /** No answer: the call ends only when its signal fires, as the signal's reason says. */
  | { hang: true }
  /** An accepted WebSocket (`socket`), whose other side is this peer. */
  | { peer: ScriptedPeer };

/** The other side of a scripted WebSocket: it hears the open and each message, and answers through `side`. */
export interface ScriptedPeer {
  open?(side: PeerSide): void;
  message?(text: string, side: PeerSide): void;
}

export interface PeerSide {
  /** A message to the client (an object is sent as its JSON). */
  send(message: string | object): void;
  /** The other side closes (or cuts) the socket: the client fails with this, after the messages before it. */
  close(failure?: UpstreamFailure): void;
}

export type Script = Answer | ((call: RecordedCall) => Answer | Promise<Answer>);

export interface RecordedCall {
  op: 'text' | 'json' | 'events' | 'relay' | 'check' | 'socket';
  method: UpstreamCall['method'];
  path: string;
  headers: Record<string, string>;
  /** The JSON body parsed; undefined for none or bytes (see `raw`). */
  body: unknown;
  raw: string | Buffer | undefined;
  signal: CallSignal;
  /** The cap `text`/`json` were given. */
  cap?: number;
  options?: EventReadingOptions;
  /** Events or chunks the consumer has pulled from the upstream so far. */
  read: number;
  /** Whether the stream was left (closed, cancelled) before its body was all read; for a socket, whether it is closed. */
  left: boolean;
  /** A socket's messages sent by the client, in order; its call's idle bound and close code. */
  sent?: string[];
  idleMs?: number;
  closedCode?: string;
}

/** A non-2xx answer as the real executor reports it (`httpFailure`): its status, message, error fields, Retry-After. */
export const refusal = (status: number, body: unknown = '', retryAfter?: string): { fail: UpstreamFailure } => ({
  fail: httpFailure(status, typeof body === 'string' ? body : JSON.stringify(body), retryAfter),
});

/** A connection the upstream cut (mid-body, or before the headers). */
export const cut = (code = 'ECONNRESET'): UpstreamFailure =>
  new UpstreamFailure({ kind: 'connection', code, message: 'other side closed' });

const parsedBody = (body: string | Buffer | undefined): unknown => {
  if (typeof body !== 'string') return undefined;
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
};

/** Waits for the call's signal; what the real executor throws when it fires (a timeout, a cancel, the core's verdict). */
const aborted = (signal: CallSignal): Promise<never> =>
  new Promise((_resolve, reject) => {
    if (signal.aborted) return reject(abortFailure(signal.reason));
    signal.addEventListener('abort', () => reject(abortFailure(signal.reason)), { once: true });
  });

export class ScriptedExecutor implements UpstreamExecutor {
  readonly calls: RecordedCall[] = [];
  private readonly queue: Script[] = [];
  closed = false;

  /** `fallback` answers every call past the queued ones (none: such a call fails the test). */
  constructor(private readonly fallback?: Script) {}

  /** Queues answers, one per call, in order. */
  answer(...scripts: Script[]): this {
    this.queue.push(...scripts);
    return this;
  }

  /** Forgets the calls and the answers not used. */
  reset(): void {
    this.calls.length = 0;
    this.queue.length = 0;
  }

  /** The one call made; fails when there were none or several. */
  only(): RecordedCall {
    if (this.calls.length !== 1) throw new Error(`expected one upstream call, saw ${this.calls.length}`);
    return this.calls[0];
  }

  async text(call: UpstreamCall, cap?: number): Promise<string> {
    const answer = await this.take('text', call, { cap });
    return this.whole(answer, 'text');
  }

  async json(call: UpstreamCall, cap?: number): Promise<Record<string, unknown>> {
    const answer = await this.take('json', call, { cap });
    return parseJsonBody(this.whole(answer, 'json'));
  }

  async events<T>(
    call: UpstreamCall,
    translate: (event: SseEvent) => StreamStep<T>,
    options: EventReadingOptions = {},
  ): Promise<AsyncIterableIterator<T>> {
    const record = this.record('events', call, { options });
    const answer = await this.respond(record);
    if ('wholeJson' in answer) {
      if (options.wholeJsonCap === undefined)
        throw new Error('a JSON answer to a stream is read whole only with wholeJsonCap; this call did not ask');
      return new ScriptedEvents(record, translate, [JSON.stringify(answer.wholeJson)], undefined, () => true);
    }
    if (!('events' in answer)) throw new Error(`events() was answered with ${Object.keys(answer).join(', ')}`);
    return new ScriptedEvents(record, translate, answer.events, answer.then, options.complete);
  }

  async relay(call: UpstreamCall): Promise<AsyncIterable<Buffer>> {
    const record = this.record('relay', call, {});
    const answer = await this.respond(record);
    if (!('chunks' in answer)) throw new Error(`relay() was answered with ${Object.keys(answer).join(', ')}`);
    return relayed(record, answer.chunks, answer.then, answer.gapMs);
  }

  async check(call: UpstreamCall): Promise<void> {
    await this.take('check', call, {});
  }

  /**
   * A scripted WebSocket, with the real one's contract: it opens a tick later with a `peer` answer (fails with a
   * `fail` one, waits for the signal with `hang`), messages sent before the open go on it, `next` hands out the
   * peer's messages then the failure, the signal fails it as its reason says, and `idleMs` (default 5 s) of
   * nothing to read is STREAM_IDLE.
   */
  socket(call: UpstreamSocketCall): UpstreamSocket {
    const record = this.record(
      'socket',
      { method: 'GET', path: call.path, headers: call.headers, signal: call.signal },
      {
        sent: [],
        idleMs: call.idleMs,
        closedCode: call.closedCode,
      },
    );
    return new ScriptedSocket(record, call, this.respond(record));
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  private async take(op: RecordedCall['op'], call: UpstreamCall, extra: Partial<RecordedCall>): Promise<Answer> {
    return this.respond(this.record(op, call, extra));
  }

  private record(op: RecordedCall['op'], call: UpstreamCall, extra: Partial<RecordedCall>): RecordedCall {
    const record: RecordedCall = {
      op,
      method: call.method,
      path: call.path,
      headers: { ...call.headers },
      body: parsedBody(call.body),
      raw: call.body,
      signal: call.signal,
      read: 0,
      left: false,
      ...extra,
    };
    this.calls.push(record);
    return record;
  }

  /** The scripted answer, once a tick has passed (as a real answer would); refusals and hangs as the real ones. */
  private async respond(record: RecordedCall): Promise<Answer> {
    if (record.signal.aborted) return aborted(record.signal); // never sent
    const script = this.queue.shift() ?? this.fallback;
    if (script === undefined) throw new Error(`no answer scripted for ${record.method} ${record.path}`);
    const answer = typeof script === 'function' ? await script(record) : await Promise.resolve(script);
    if ('hang' in answer) return aborted(record.signal);
    if ('fail' in answer) throw answer.fail;
    return answer;
  }

  private whole(answer: Answer, op: string): string {
    if ('text' in answer) return answer.text;
    if ('json' in answer) return JSON.stringify(answer.json);
    throw new Error(`${op}() was answered with ${Object.keys(answer).join(', ')}`);
  }
}

const TRUNCATED = (): UpstreamFailure =>
  new UpstreamFailure({
    kind: 'connection',
    code: 'STREAM_TRUNCATED',
    message: 'upstream stream ended before its end marker',
  });

/** The scripted events as SseReading hands them out: translated in order, up to the end marker or a fault. */
class ScriptedEvents<T> implements AsyncIterableIterator<T> {
  private at = 0;
  private done = false;

  constructor(
    private readonly record: RecordedCall,
    private readonly translate: (event: SseEvent) => StreamStep<T>,
    private readonly script: Array<string | SseEvent>,
    private readonly fault: UpstreamFailure | undefined,
    private readonly complete: (() => boolean) | undefined,
  ) {}

  next(): Promise<IteratorResult<T>> {
    try {
      return Promise.resolve(this.step());
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  private step(): IteratorResult<T> {
    while (!this.done) {
      const { signal } = this.record;
      if (signal.aborted) this.fail(abortFailure(signal.reason));
      if (this.at === this.script.length) {
        if (this.fault) this.fail(this.fault);
        if (!this.complete?.()) this.fail(TRUNCATED(), false);
        this.done = true;
        break;
      }
      const entry = this.script[this.at++];
      this.record.read = this.at;
      const event = typeof entry === 'string' ? { event: 'message', data: entry } : entry;
      let step: StreamStep<T>;
      try {
        step = this.translate(event);
      } catch (err) {
        this.fail(toUpstreamFailure(err, signal));
      }
      if (step === 'end') this.done = true;
      else if (step !== undefined) return { done: false, value: step };
    }
    return { done: true, value: undefined };
  }

  /** The stream fails; unless its body was all read (`cut` false), the connection is dropped, as SseReading drops it. */
  private fail(failure: UpstreamFailure, cut = true): never {
    this.done = true;
    if (cut) this.record.left = true;
    throw failure;
  }

  return(): Promise<IteratorResult<T>> {
    if (!this.done) this.record.left = true;
    this.done = true;
    return Promise.resolve({ done: true, value: undefined });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

/** The scripted chunks as `relay` hands them out: a cancel fails the next read, a consumer that leaves is noted. */
async function* relayed(
  record: RecordedCall,
  chunks: Buffer[],
  fault?: UpstreamFailure,
  gapMs = 0,
): AsyncGenerator<Buffer> {
  let complete = false;
  try {
    for (const [i, chunk] of chunks.entries()) {
      // a read is a turn of the event loop (or the gap), where a cancel can land
      await (gapMs > 0 && i > 0 ? new Promise((resolve) => setTimeout(resolve, gapMs)) : Promise.resolve());
      if (record.signal.aborted) throw abortFailure(record.signal.reason);
      record.read += 1;
      yield chunk;
    }
    if (fault) throw fault;
    complete = true;
  } finally {
    if (!complete) record.left = true;
  }
}

/** A scripted WebSocket (ScriptedExecutor.socket): the peer's messages queued, the first failure kept. */
class ScriptedSocket implements UpstreamSocket {
  readonly opened: Promise<void>;
  private readonly messages: string[] = [];
  private pending: string[] | null = [];
  private failed: UpstreamFailure | null = null;
  private wake: (() => void) | null = null;
  private idle: NodeJS.Timeout | undefined;
  private peer: ScriptedPeer | null = null;
  private readonly side: PeerSide;
  private readonly onAbort = (): void => {
    this.messages.length = 0;
    this.fail(abortFailure(this.record.signal.reason));
  };

  constructor(
    private readonly record: RecordedCall,
    private readonly call: UpstreamSocketCall,
    answer: Promise<Answer>,
  ) {
    this.side = {
      send: (message) => {
        if (this.failed) return;
        this.messages.push(typeof message === 'string' ? message : JSON.stringify(message));
        this.armIdle();
        this.notify();
      },
      close: (failure) =>
        this.fail(
          failure ??
            new UpstreamFailure({
              kind: 'connection',
              code: call.closedCode ?? 'SOCKET_CLOSED',
              message: 'the upstream socket closed (1006)',
            }),
        ),
    };
    this.opened = answer.then((reply) => {
      if (!('peer' in reply)) throw new Error(`socket() was answered with ${Object.keys(reply).join(', ')}`);
      if (this.failed) throw this.failed;
      this.peer = reply.peer;
      const pending = this.pending ?? [];
      this.pending = null;
      reply.peer.open?.(this.side);
      for (const text of pending) this.deliver(text);
    });
    this.opened.catch((err: unknown) => this.fail(toUpstreamFailure(err, record.signal)));
    call.signal.addEventListener('abort', this.onAbort, { once: true });
    this.armIdle();
  }

  send(text: string): void {
    if (this.failed) return;
    if (this.pending) this.pending.push(text);
    else this.deliver(text);
  }

  private deliver(text: string): void {
    this.record.sent?.push(text);
    this.peer?.message?.(text, this.side);
  }

  async next(): Promise<string> {
    for (;;) {
      const message = this.messages.shift();
      if (message !== undefined) {
        this.record.read += 1;
        this.armIdle();
        return message;
      }
      if (this.failed) throw this.failed;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  close(): void {
    this.messages.length = 0;
    this.fail(new UpstreamFailure({ kind: 'connection', code: 'SOCKET_CLOSED', message: 'closed by the gateway' }));
  }

  private armIdle(): void {
    clearTimeout(this.idle);
    if (this.failed || this.messages.length > 0) return;
    const ms = this.call.idleMs ?? 5000;
    this.idle = setTimeout(
      () => this.fail(new UpstreamFailure({ kind: 'connection', code: 'STREAM_IDLE', message: `silent ${ms} ms` })),
      ms,
    );
  }

  private fail(failure: UpstreamFailure): void {
    if (this.failed) return;
    this.failed = failure;
    this.pending = null;
    this.record.left = true;
    clearTimeout(this.idle);
    this.record.signal.removeEventListener('abort', this.onAbort);
    this.notify();
  }

  private notify(): void {
    this.wake?.();
    this.wake = null;
  }
}
