import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type {
  RealtimeClientEvent,
  RealtimeServerEvent,
  RealtimeSessionCreateRequest,
} from 'openai/resources/realtime/realtime';
import { WebSocket, WebSocketServer } from 'ws';
import { rawText } from '../../src/providers/upstream-socket';
import { encodedTone, splitBytes, toneSeconds } from './speech-audio';

/**
 * A fake of OpenAI's Realtime API (`GET /v1/realtime?model=…` upgraded to a WebSocket) that speaks the official SDK's
 * event types, so a renamed event breaks this file's compilation: `session.created` on connect, `session.updated`
 * for a `session.update`, and for each `response.create` the text of the last `conversation.item.create` as a 440 Hz
 * tone of toneSeconds(text) in `response.output_audio.delta` events (24 kHz 16-bit mono PCM, base64), then
 * `response.output_audio.done` and `response.done`. `GET /v1/models` answers for the breaker's probe.
 */

export type FakeRealtimeMode =
  | 'ok'
  /** An `error` event in answer to `response.create`, before any audio. */
  | 'errorBeforeAudio'
  /** The socket closed in answer to `response.create`, before any audio. */
  | 'closeBeforeAudio'
  /** One audio delta, then the socket closed. */
  | 'closeAfterFirstAudio'
  /** The upgrade refused with 401 and OpenAI's error body. */
  | 'refuse401'
  /** `response.create` is never answered. */
  | 'silent';

/** One WebSocket session as the fake saw it. */
export interface RealtimeSessionRecord {
  model: string | null;
  authorization: string | undefined;
  /** The upgrade request's headers (a `traceparent` among them when traces are on). */
  headers: IncomingHttpHeaders;
  /** The last `session.update`'s session. */
  session: RealtimeSessionCreateRequest | null;
  /** The text of each `conversation.item.create`, in order. */
  texts: string[];
  /** `response.create` events received. */
  responses: number;
  closed: boolean;
}

export interface FakeOpenAiRealtime {
  /** The API root to configure as an `openai` provider's `base_url` (…/v1). */
  url: string;
  readonly sessions: RealtimeSessionRecord[];
  mode: FakeRealtimeMode;
  /** Audio deltas per response (default 5) and the pause between them (default 0). */
  audioChunks: number;
  chunkDelayMs: number;
  /** The voice of the last session, as `session.update` sent it (a name, or `{id}` for a custom voice). */
  lastVoice(): unknown;
  reset(): void;
  close(): Promise<void>;
}

let sequence = 0;
const id = (prefix: string): string => `${prefix}_fake${++sequence}`;

/**
 * Starts the fake on its own port, or with `host` on the port of an HTTP fake (FakeOpenAi) whose other routes
 * (custom voices, models) then answer beside the Realtime upgrade, as one OpenAI host does.
 */
export async function startFakeOpenAiRealtime(
  options: { mode?: FakeRealtimeMode; audioChunks?: number; host?: { httpServer: Server; url: string } } = {},
): Promise<FakeOpenAiRealtime> {
  const sockets = new Set<Socket>();
  const wss = new WebSocketServer({ noServer: true });
  const server: Server =
    options.host?.httpServer ??
    createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/v1/models') {
        res.writeHead(200, { 'content-type': 'application/json' });
        return void res.end(
          JSON.stringify({ object: 'list', data: [{ id: 'gpt-realtime-2.1-mini', object: 'model' }] }),
        );
      }
      res.writeHead(404).end();
    });
  if (!options.host)
    server.on('connection', (socket) => (sockets.add(socket), socket.once('close', () => sockets.delete(socket))));

  const fake: FakeOpenAiRealtime = {
    url: '',
    sessions: [],
    mode: options.mode ?? 'ok',
    audioChunks: options.audioChunks ?? 5,
    chunkDelayMs: 0,
    lastVoice: () => fake.sessions.at(-1)?.session?.audio?.output?.voice,
    reset: () => {
      fake.sessions.length = 0;
      fake.mode = 'ok';
      fake.chunkDelayMs = 0;
    },
    close: async () => {
      for (const client of wss.clients) client.terminate();
      if (options.host) return;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (url.pathname !== '/v1/realtime') return void socket.destroy();
    if (fake.mode === 'refuse401') {
      const body = JSON.stringify({
        error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' },
      });
      return void socket.end(
        `HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
      );
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const record: RealtimeSessionRecord = {
        model: url.searchParams.get('model'),
        authorization: req.headers.authorization,
        headers: req.headers,
        session: null,
        texts: [],
        responses: 0,
        closed: false,
      };
      fake.sessions.push(record);
      converse(ws, record, fake);
    });
  });
  if (options.host) fake.url = options.host.url;
  else {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  }
  return fake;
}

function converse(ws: WebSocket, record: RealtimeSessionRecord, fake: FakeOpenAiRealtime): void {
  const send = (event: RealtimeServerEvent): void => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(event));
  };
  let active = false;
  ws.on('close', () => (record.closed = true));
  send({
    type: 'session.created',
    event_id: id('event'),
    session: { type: 'realtime', model: record.model ?? undefined, output_modalities: ['audio'] },
  });
  ws.on('message', (data) => {
    const event = JSON.parse(rawText(data)) as RealtimeClientEvent;
    if (event.type === 'session.update' && event.session.type === 'realtime') {
      record.session = event.session;
      send({ type: 'session.updated', event_id: id('event'), session: event.session });
    } else if (event.type === 'conversation.item.create') {
      const item = event.item;
      if (item.type === 'message' && item.role === 'user')
        record.texts.push(item.content.map((part) => part.text ?? '').join(''));
    } else if (event.type === 'response.create') {
      record.responses += 1;
      // as OpenAI does: one response at a time writes to the conversation
      if (active)
        return send(
          errorEvent('conversation_already_has_active_response', 'Conversation already has an active response'),
        );
      active = true;
      void respond(ws, send, record, fake).finally(() => (active = false));
    }
  });
}

const errorEvent = (code: string, message: string, type = 'invalid_request_error'): RealtimeServerEvent => ({
  type: 'error',
  event_id: id('event'),
  error: { type, code, message },
});

async function respond(
  ws: WebSocket,
  send: (event: RealtimeServerEvent) => void,
  record: RealtimeSessionRecord,
  fake: FakeOpenAiRealtime,
): Promise<void> {
  const mode = fake.mode;
  if (mode === 'silent') return;
  if (mode === 'errorBeforeAudio') return send(errorEvent('server_error', 'The server had an error', 'server_error'));
  if (mode === 'closeBeforeAudio') return void ws.terminate();
  const response_id = id('resp');
  const item_id = id('item');
  send({
    type: 'response.created',
    event_id: id('event'),
    response: { id: response_id, object: 'realtime.response', status: 'in_progress' },
  });
  const text = record.texts.at(-1) ?? '';
  const pcm = await encodedTone('pcm', { sampleRate: 24000, channels: 1, bitrate: 0 }, toneSeconds(text));
  const place = { response_id, item_id, output_index: 0, content_index: 0 };
  for (const [i, piece] of splitBytes(pcm, fake.audioChunks).entries()) {
    if (i > 0 && fake.chunkDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, fake.chunkDelayMs));
    if (ws.readyState !== WebSocket.OPEN) return;
    send({ type: 'response.output_audio.delta', event_id: id('event'), ...place, delta: piece.toString('base64') });
    if (mode === 'closeAfterFirstAudio') return void ws.terminate();
  }
  send({ type: 'response.output_audio.done', event_id: id('event'), ...place });
  send({
    type: 'response.done',
    event_id: id('event'),
    response: { id: response_id, object: 'realtime.response', status: 'completed', output_modalities: ['audio'] },
  });
}
