import { BeforeApplicationShutdown, Logger } from '@nestjs/common';
import { OnGatewayConnection, OnGatewayInit, WebSocketGateway } from '@nestjs/websockets';
import type { IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WebSocket, WebSocketServer } from 'ws';
import { bearerToken } from '../../common/http/route-access';
import { admitProxyKey, authenticateProxyKey, ProxyKeyCheck } from '../../auth/auth.guard';
import { DomainError } from '../../common/errors/domain-error';
import { newId, newRequestId } from '../../common/ids';
import { REQUEST_ID_HEADER, requestIdOf, SDK_REQUEST_ID_HEADER } from '../../common/http/request-id';
import { logRefusedUpgrade } from '../../common/http/gateway-ws-adapter';
import { EnvironmentVariables } from '../../config/env.schema';
import { AudioPoolHost } from '../../audio/audio.module';
import { FailoverService } from '../../failover/failover.service';
import { AuthenticatedKey, KeyDirectory } from '../../keys/key-directory';
import { RateLimiter } from '../../quotas/rate-limiter.service';
import { MetricsService } from '../../metrics/metrics.service';
import { SpeechService } from '../speech.service';
import { SpeechStreamSession } from './speech-stream.session';
import { taskFailed } from './stream-replies';
import { StreamTicketsService } from './tickets/stream-tickets.service';
import { tracing } from '../../tracing/tracing';

export const STREAM_PATH = '/v1/audio/speech/stream';
/** MiniMax's own path of the same stream (decisions §10): MiniMax's clients connect here unchanged. */
export const MINIMAX_STREAM_PATH = '/ws/v1/t2a_v2';
/**
 * Largest client frame; larger → close 1009. A legal task_continue holds 10,000 characters, and JSON-escaped
 * (`\ud83d\ude00`, Python's json.dumps default) one can take 12 bytes: 120,000 bytes, plus the JSON around it.
 */
export const MAX_MESSAGE_BYTES = 256 * 1024;
/** Unread audio the server holds for one client before it stops making more (and, after SVC_WS_STALL_MS, closes). */
export const SEND_HIGH_WATER_BYTES = 1024 * 1024;

/** How long closing streams wait for their clients' close frames. */
const CLOSE_HANDSHAKE_MS = 1000;

type VerifyCallback = (result: boolean, code?: number, message?: string, headers?: Record<string, string>) => void;

/** The route a stream was opened on (MiniMax's clients open their own path, decisions §10). */
const streamRoute = (request: IncomingMessage): string =>
  request.url?.startsWith(MINIMAX_STREAM_PATH) ? MINIMAX_STREAM_PATH : STREAM_PATH;

const keyOfUpgrade = new WeakMap<IncomingMessage, AuthenticatedKey>();

/**
 * WebSocket speech stream on the HTTP port (also served at MINIMAX_STREAM_PATH, see GatewayWsAdapter). The
 * key is checked on the upgrade (Authorization header; for browsers a single-use `?ticket=`, or the
 * discouraged `?api_key=`), so a bad key gets an HTTP 401 and never a socket; then on every client message.
 */
@WebSocketGateway({ path: STREAM_PATH, maxPayload: MAX_MESSAGE_BYTES })
export class SpeechStreamGateway
  implements OnGatewayInit<WebSocketServer>, OnGatewayConnection<WebSocket>, BeforeApplicationShutdown
{
  private readonly logger = new Logger(SpeechStreamGateway.name);
  private readonly sessions = new Set<SpeechStreamSession>();
  /** Open streams per key id on this replica (SVC_WS_MAX_STREAMS_PER_KEY). */
  private readonly openByKey = new Map<string, number>();

  constructor(
    private readonly keys: KeyDirectory,
    private readonly speech: SpeechService,
    private readonly failover: FailoverService,
    private readonly env: EnvironmentVariables,
    private readonly rateLimiter: RateLimiter,
    private readonly metrics: MetricsService,
    private readonly tickets: StreamTicketsService,
    private readonly audioPool: AudioPoolHost,
  ) {}

  /** SVC_WS_MAX_STREAMS_PER_KEY, else the key's share of the audio pool: one key's streams cannot fill it. */
  get maxStreamsPerKey(): number {
    return this.env.SVC_WS_MAX_STREAMS_PER_KEY ?? this.audioPool.jobsPerKey;
  }

  afterInit(server: WebSocketServer): void {
    server.options.verifyClient = (info: { req: IncomingMessage }, done: VerifyCallback) =>
      void this.verify(info.req, done);
    // the 101 carries the upgrade's id like every other response (decisions §4): the one verify gave the request
    server.on('headers', (headers: string[], request: IncomingMessage) => {
      const requestId = requestIdOf(request);
      headers.push(`${REQUEST_ID_HEADER}: ${requestId}`, `${SDK_REQUEST_ID_HEADER}: ${requestId}`);
    });
  }

  handleConnection(ws: WebSocket, request: IncomingMessage): void {
    const key = keyOfUpgrade.get(request);
    if (!key) {
      ws.close(1008, 'unauthenticated');
      return;
    }
    const sessionId = newId('sess');
    // upgrades checked at the same time may all have passed verify: the count here is the exact one
    if (this.openStreams(key.id) >= this.maxStreamsPerKey) {
      const error = this.tooManyStreams();
      ws.send(JSON.stringify(taskFailed(sessionId, requestIdOf(request), error)));
      ws.close(1008, error.code);
      return;
    }
    const currentKey = (): AuthenticatedKey | null => this.keys.byId(key.id);
    const session = new SpeechStreamSession(
      ws,
      sessionId,
      requestIdOf(request),
      currentKey,
      this.speech,
      this.failover,
      {
        idleMs: this.env.SVC_WS_IDLE_MS,
        highWaterBytes: SEND_HIGH_WATER_BYTES,
        stalledMs: this.env.SVC_WS_STALL_MS,
        maxAudioSeconds: this.env.SVC_MAX_AUDIO_SECONDS,
      },
      // tracing hook: each turn's SERVER span joins the upgrade's traceparent
      tracing.on ? tracing.upgradeOrigin(request, streamRoute(request)) : null,
    );
    this.sessions.add(session);
    this.metrics.sessionOpened();
    this.openByKey.set(key.id, this.openStreams(key.id) + 1);
    ws.on('close', () => {
      this.sessions.delete(session);
      this.metrics.sessionClosed();
      const left = this.openStreams(key.id) - 1;
      if (left > 0) this.openByKey.set(key.id, left);
      else this.openByKey.delete(key.id);
    });
  }

  /**
   * SIGTERM: each stream first speaks the text it has already queued (a finishing task completes
   * and closes 1000), then closes with 1001; what is still open after `boundMs` closes at once.
   */
  async drain(boundMs: number): Promise<void> {
    const spoken = Promise.allSettled([...this.sessions].map((session) => session.drain()));
    await Promise.race([spoken, sleep(boundMs, undefined, { ref: false })]);
    for (const session of this.sessions) session.shutdown();
    // the clients answer the close frames; sockets that do not are terminated with the server
    const handshakeEnd = Date.now() + CLOSE_HANDSHAKE_MS;
    while (this.sessions.size > 0 && Date.now() < handshakeEnd) await sleep(20);
  }

  /** Before the WebSocket server terminates its sockets: whatever is still open is told 1001 first. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.drain(0);
  }

  get openSessions(): number {
    return this.sessions.size;
  }

  /** Open streams of one key on this replica. */
  openStreams(keyId: string): number {
    return this.openByKey.get(keyId) ?? 0;
  }

  private tooManyStreams(): DomainError {
    const max = this.maxStreamsPerKey;
    return new DomainError(
      'too_many_streams',
      `This key already has ${max} open speech streams (the limit); close one first.`,
    );
  }

  /**
   * The bearer header first; then a single-use `?ticket=` (browsers); then `?api_key=` (kept for compatibility,
   * discouraged: URLs end up in logs). The same check as every HTTP route, plus the key's open-stream count.
   */
  private async authenticate(request: IncomingMessage, url: URL): Promise<AuthenticatedKey> {
    const check: ProxyKeyCheck = {
      missing:
        'Missing API key: send `Authorization: Bearer <API_KEY>`, or `?ticket=` from POST /v1/audio/speech/stream/tickets.',
      before: (key) => {
        if (this.openStreams(key.id) >= this.maxStreamsPerKey) throw this.tooManyStreams();
      },
    };
    const bearer = request.headers.authorization;
    const ticket = bearerToken(bearer) ? null : url.searchParams.get('ticket');
    if (ticket) {
      const invalid = (): DomainError =>
        new DomainError(
          'invalid_ticket',
          'The ticket is unknown, already used or expired: get a new one from POST /v1/audio/speech/stream/tickets.',
        );
      const key = await this.tickets.holder(ticket);
      if (!key) throw invalid();
      // every check first: a refused upgrade (too many streams, rate limit) does not spend the single-use ticket
      admitProxyKey(this.rateLimiter, key, check);
      if (!(await this.tickets.spend(ticket, key.id))) throw invalid();
      return key;
    }
    const apiKey = bearerToken(bearer) ? null : url.searchParams.get('api_key');
    return authenticateProxyKey(this.keys, this.rateLimiter, apiKey ? `Bearer ${apiKey}` : bearer, check);
  }

  private async verify(request: IncomingMessage, done: VerifyCallback): Promise<void> {
    // the upgrade's id, on the request as the HTTP chain puts it (requestIdOf): the 101 or the refusal carries it
    const requestId = newRequestId();
    (request as IncomingMessage & { id?: string }).id = requestId;
    const idHeaders = { [REQUEST_ID_HEADER]: requestId, [SDK_REQUEST_ID_HEADER]: requestId };
    const refuse = (error: DomainError): void => {
      logRefusedUpgrade(request, error, requestId);
      done(false, error.status, JSON.stringify(error.toBody()), {
        ...error.headers,
        'Content-Type': 'application/json',
        ...idHeaders,
      });
    };
    try {
      const url = new URL(request.url ?? '/', 'http://localhost');
      const key = await this.authenticate(request, url);
      keyOfUpgrade.set(request, key);
      done(true);
    } catch (err) {
      if (err instanceof DomainError) return refuse(err);
      this.logger.error({ err, request_id: requestId }, 'WebSocket authentication failed');
      refuse(new DomainError('database_unavailable', 'Authentication is unavailable; retry shortly.'));
    }
  }
}
