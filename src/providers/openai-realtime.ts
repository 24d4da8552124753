import type {
  RealtimeClientEvent,
  RealtimeError,
  RealtimeResponse,
  RealtimeServerEvent,
  RealtimeSessionCreateRequest,
} from 'openai/resources/realtime/realtime';
import type { CallSignal } from '../common/call-signal';
import { UpstreamFailure } from './provider-adapter';
import type { UpstreamExecutor } from './upstream-executor';

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

/** The Realtime API's path under the base URL (`…/v1/realtime?model=…`), for the executor's socket. */
export function realtimePath(model: string): string {
  return `/realtime?${new URLSearchParams({ model }).toString()}`;
}

/** One Realtime speech call: which model, with which session, which pieces of text (one response each). */
export interface RealtimeCall {
  model: string;
  /** The upgrade's headers (the provider's credential). */
  headers: Record<string, string>;
  session: RealtimeSessionCreateRequest;
  pieces: readonly string[];
  /** Cancels the call; an attempt's (a CallAbort) also holds the trace headers its upgrade carries. */
  signal: CallSignal;
}

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

/** A server event, or null for a message that is none (not JSON, no `type`): skipped. */
function parseEvent(text: string): RealtimeServerEvent | null {
  try {
    const event = JSON.parse(text) as unknown;
    return typeof event === 'object' && event !== null && typeof (event as { type?: unknown }).type === 'string'
      ? (event as RealtimeServerEvent)
      : null;
  } catch {
    return null;
  }
}

/**
 * The raw 24 kHz mono PCM of `call`, delta by delta. Throws UpstreamFailure on an `error` event, an unfinished
 * response, a refused upgrade or a socket closed before the last `response.done` (the core fails over before the
 * first audio, and breaks or continues the stream after it). The call's signal and an early exit close the socket.
 */
export async function* realtimePcm(upstream: UpstreamExecutor, call: RealtimeCall): AsyncGenerator<Buffer> {
  // the executor owns the socket: its faults, refused upgrade, idle bound, signal, trace headers and back-pressure
  const socket = upstream.socket({
    path: realtimePath(call.model),
    headers: call.headers,
    signal: call.signal,
    closedCode: 'REALTIME_CLOSED',
  });
  const send = (event: RealtimeClientEvent): void => socket.send(JSON.stringify(event));
  const ask = (text: string): void => {
    send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
    });
    send({ type: 'response.create', response: { output_modalities: ['audio'] } });
  };
  try {
    await socket.opened;
    // sent at once: the server handles a session's events in order, so the first audio waits for no round trip
    send({ type: 'session.update', session: call.session });
    ask(call.pieces[0]);
    let piece = 0;
    let audio = false;
    for (;;) {
      const event = parseEvent(await socket.next());
      // session.created/updated, response.created, transcripts, output_audio.done: nothing to do
      if (event?.type === 'response.output_audio.delta') {
        audio = true;
        yield Buffer.from(event.delta, 'base64');
      } else if (event?.type === 'error') {
        throw errorEventFailure(event.error);
      } else if (event?.type === 'response.done') {
        if (event.response.status !== 'completed') throw unfinished(event.response);
        if (!audio) throw failure('no_audio', 'the Realtime response completed without audio');
        piece += 1;
        if (piece === call.pieces.length) return;
        audio = false;
        ask(call.pieces[piece]);
      }
    }
  } finally {
    socket.close();
  }
}
