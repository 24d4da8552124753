import type { IncomingMessage } from 'node:http';
import type {
  RealtimeClientEvent,
  RealtimeError,
  RealtimeResponse,
  RealtimeServerEvent,
  RealtimeSessionCreateRequest,
} from 'openai/resources/realtime/realtime';
import { WebSocket, type RawData } from 'ws';
import { type CallSignal, traceHeadersOf } from '../common/call-signal';
import { UpstreamFailure } from './provider-adapter';
import { abortFailure, ERROR_BODY_CAP, httpFailure, toUpstreamFailure } from './upstream-errors';

/**
 * The wire session of OpenAI's Realtime API used as a speech engine (decisions §10): one WebSocket per call, a
 * `session.update` with the voice and 24 kHz PCM output, then one `conversation.item.create` + `response.create` per
 * piece of text, each answered by `response.output_audio.delta` events until its `response.done`. The event shapes
 * are the official SDK's types, so a renamed event breaks the build.
 */

/** An `openai` step model reached only through the Realtime API: `gpt-realtime*` or any `*-realtime*`. */
export function isRealtimeModel(model: string): boolean {
  return model.startsWith('gpt-realtime') || model.includes('-realtime');
}

/** `wss://<base_url host><base_url path>/realtime?model=…` (ws:// for an http base URL, as a test fake has). */
export function realtimeUrl(baseUrl: string, model: string): string {
  const url = new URL(baseUrl);
  url.protocol = url.protocol === 'http:' ? 'ws:' : 'wss:';
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/realtime`;
  url.search = new URLSearchParams({ model }).toString();
  return url.toString();
}

/** One Realtime speech call: where, with which session, which pieces of text (one response each). */
export interface RealtimeCall {
  url: string;
  apiKey?: string;
  session: RealtimeSessionCreateRequest;
  pieces: readonly string[];
  /** Cancels the call; an attempt's (a CallAbort) also holds the trace headers its upgrade carries. */
  signal: CallSignal;
  /** Longest silence of the socket once the call has begun (the provider's stream idle timeout). */
  idleMs: number;
}

/** Server events buffered before the socket is paused (the consumer is the transcoder, which keeps up). */
const HIGH_WATER = 64;
const LOW_WATER = 8;

const failure = (code: string, message: string, requestFault = false): UpstreamFailure =>
  new UpstreamFailure({ kind: 'provider_error', code, message, ...(requestFault ? { requestFault: true } : {}) });

/** An `error` event: the request's fault when OpenAI says so (`invalid_request_error`), else the provider's. */
export function errorEventFailure(error: RealtimeError): UpstreamFailure {
  return failure(error.code ?? error.type, error.message, error.type === 'invalid_request_error');
}

/** A `response.done` that did not complete (failed, cancelled, cut by max tokens or the content filter). */
function unfinished(response: RealtimeResponse): UpstreamFailure {
  const details = response.status_details;
  const reason = details?.error?.message ?? details?.reason ?? 'no reason given';
  return failure(
    details?.error?.code ?? `response_${response.status ?? 'unknown'}`,
    `response ${response.status}: ${reason}`,
  );
}

/** Server events as they come, or the first failure; pauses the socket while the consumer is behind. */
class EventQueue {
  private readonly events: RealtimeServerEvent[] = [];
  private failed: UpstreamFailure | null = null;
  private wake: (() => void) | null = null;

  constructor(private readonly socket: WebSocket) {}

  push(event: RealtimeServerEvent): void {
    this.events.push(event);
    if (this.events.length >= HIGH_WATER) this.socket.pause();
    this.notify();
  }

  fail(err: UpstreamFailure): void {
    this.failed ??= err;
    this.notify();
  }

  async next(): Promise<RealtimeServerEvent> {
    for (;;) {
      const event = this.events.shift();
      if (event) {
        if (this.events.length === LOW_WATER && this.socket.isPaused) this.socket.resume();
        return event;
      }
      if (this.failed) throw this.failed;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private notify(): void {
    this.wake?.();
    this.wake = null;
  }
}

/** A message's text, whichever of ws's shapes it came in. */
export function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.from(data).toString('utf8');
}

function parseEvent(data: RawData): RealtimeServerEvent | null {
  try {
    const event = JSON.parse(rawText(data)) as unknown;
    return typeof event === 'object' && event !== null && typeof (event as { type?: unknown }).type === 'string'
      ? (event as RealtimeServerEvent)
      : null;
  } catch {
    return null;
  }
}

/** A refused upgrade (401 bad key, 404 unknown model, 429) as the HTTP failure it is, with OpenAI's error body. */
function readRefusal(res: IncomingMessage, done: (err: UpstreamFailure) => void): void {
  const parts: Buffer[] = [];
  let size = 0;
  res.on('data', (chunk: Buffer) => {
    if (size < ERROR_BODY_CAP) parts.push(chunk);
    size += chunk.length;
  });
  res.on('error', () => done(httpFailure(res.statusCode ?? 502, '')));
  res.on('end', () =>
    done(httpFailure(res.statusCode ?? 502, Buffer.concat(parts).subarray(0, ERROR_BODY_CAP).toString('utf8'))),
  );
}

/**
 * The raw 24 kHz mono PCM of `call`, delta by delta. Throws UpstreamFailure on an `error` event, an unfinished
 * response, a refused upgrade or a socket closed before the last `response.done` (the core fails over before the
 * first audio, and breaks or continues the stream after it). The call's signal and an early exit close the socket.
 */
export async function* realtimePcm(call: RealtimeCall): AsyncGenerator<Buffer> {
  const socket = new WebSocket(call.url, {
    // the upgrade carries the attempt's traceparent as every other upstream request does (decisions §12); none when off
    headers: { ...(call.apiKey ? { authorization: `Bearer ${call.apiKey}` } : {}), ...traceHeadersOf(call.signal) },
    perMessageDeflate: false,
  });
  const queue = new EventQueue(socket);
  let idle: NodeJS.Timeout | undefined;
  const stillAlive = (): void => {
    clearTimeout(idle);
    idle = setTimeout(() => {
      queue.fail(
        new UpstreamFailure({ kind: 'connection', code: 'STREAM_IDLE', message: 'the Realtime socket went silent' }),
      );
      socket.terminate();
    }, call.idleMs);
  };
  const send = (event: RealtimeClientEvent): void => socket.send(JSON.stringify(event));
  const ask = (text: string): void => {
    send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
    });
    send({ type: 'response.create', response: { output_modalities: ['audio'] } });
  };
  socket.on('message', (data) => {
    stillAlive();
    const event = parseEvent(data);
    if (event) queue.push(event);
  });
  socket.on('unexpected-response', (_req, res) =>
    readRefusal(res, (err) => {
      queue.fail(err);
      socket.terminate();
    }),
  );
  socket.on('error', (err) => queue.fail(toUpstreamFailure(err, call.signal)));
  socket.on('close', (code, reason) =>
    queue.fail(
      new UpstreamFailure({
        kind: 'connection',
        code: 'REALTIME_CLOSED',
        message: `the Realtime socket closed (${code}${reason.length > 0 ? ` ${reason.toString('utf8')}` : ''})`,
      }),
    ),
  );
  socket.on('open', () => {
    // sent at once: the server handles a session's events in order, so the first audio waits for no round trip
    send({ type: 'session.update', session: call.session });
    ask(call.pieces[0]);
  });
  const onAbort = (): void => {
    queue.fail(abortFailure(call.signal.reason));
    socket.terminate();
  };
  if (call.signal.aborted) onAbort();
  else call.signal.addEventListener('abort', onAbort, { once: true });
  stillAlive();
  try {
    let piece = 0;
    let audio = false;
    for (;;) {
      const event = await queue.next();
      // session.created/updated, response.created, transcripts, output_audio.done: nothing to do
      if (event.type === 'response.output_audio.delta') {
        audio = true;
        yield Buffer.from(event.delta, 'base64');
      } else if (event.type === 'error') {
        throw errorEventFailure(event.error);
      } else if (event.type === 'response.done') {
        if (event.response.status !== 'completed') throw unfinished(event.response);
        if (!audio) throw failure('no_audio', 'the Realtime response completed without audio');
        piece += 1;
        if (piece === call.pieces.length) return;
        audio = false;
        ask(call.pieces[piece]);
      }
    }
  } finally {
    clearTimeout(idle);
    call.signal.removeEventListener('abort', onAbort);
    socket.removeAllListeners('message');
    if (socket.readyState === WebSocket.OPEN) socket.close(1000);
    else socket.terminate();
  }
}
