import { Logger, OnApplicationShutdown } from '@nestjs/common';
import { OnGatewayConnection, OnGatewayInit, WebSocketGateway } from '@nestjs/websockets';
import type { IncomingMessage } from 'node:http';
import type { WebSocket, WebSocketServer } from 'ws';
import { bearerToken } from '../../common/auth/auth.decorators';
import { DomainError } from '../../common/errors/domain-error';
import { newId, newRequestId } from '../../common/ids';
import { REQUEST_ID_HEADER } from '../../common/http/request-id';
import { EnvironmentVariables } from '../../config/env.schema';
import { FailoverService } from '../../failover/failover.service';
import { AuthenticatedKey, KeyDirectory } from '../../keys/key-directory';
import { SpeechService } from '../speech.service';
import { SpeechStreamSession } from './speech-stream.session';

export const STREAM_PATH = '/v1/audio/speech/stream';
/** Largest client frame: a 10,000-character chunk in UTF-8 with room for the JSON around it. */
const MAX_MESSAGE_BYTES = 64 * 1024;

type VerifyCallback = (result: boolean, code?: number, message?: string, headers?: Record<string, string>) => void;

const keyOfUpgrade = new WeakMap<IncomingMessage, AuthenticatedKey>();

/**
 * WebSocket speech stream on the HTTP port. The key is checked on the upgrade (Authorization
 * header, or `?api_key=` for browsers), so a bad key gets an HTTP 401 and never a socket.
 */
@WebSocketGateway({ path: STREAM_PATH, maxPayload: MAX_MESSAGE_BYTES })
export class SpeechStreamGateway implements OnGatewayInit<WebSocketServer>, OnGatewayConnection<WebSocket>, OnApplicationShutdown {
  private readonly logger = new Logger(SpeechStreamGateway.name);
  private readonly sessions = new Set<SpeechStreamSession>();

  constructor(
    private readonly keys: KeyDirectory,
    private readonly speech: SpeechService,
    private readonly failover: FailoverService,
    private readonly env: EnvironmentVariables,
  ) {}

  afterInit(server: WebSocketServer): void {
    server.options.verifyClient = (info: { req: IncomingMessage }, done: VerifyCallback) => void this.verify(info.req, done);
  }

  handleConnection(ws: WebSocket, request: IncomingMessage): void {
    const key = keyOfUpgrade.get(request);
    if (!key) {
      ws.close(1008, 'unauthenticated');
      return;
    }
    const session = new SpeechStreamSession(ws, newId('sess'), key, this.speech, this.failover, {
      idleMs: this.env.SVC_WS_IDLE_MS,
      highWaterBytes: 1024 * 1024,
      stalledMs: 15000,
    });
    this.sessions.add(session);
    ws.on('close', () => this.sessions.delete(session));
  }

  /** Open streams are told the server is going away (1001) before it stops. */
  onApplicationShutdown(): void {
    for (const session of this.sessions) session.shutdown();
  }

  get openSessions(): number {
    return this.sessions.size;
  }

  private async verify(request: IncomingMessage, done: VerifyCallback): Promise<void> {
    const requestId = newRequestId();
    const refuse = (error: DomainError): void =>
      done(false, error.status, JSON.stringify(error.toBody()), { 'Content-Type': 'application/json', [REQUEST_ID_HEADER]: requestId });
    try {
      const url = new URL(request.url ?? '/', 'http://localhost');
      const token = bearerToken(request.headers.authorization) ?? url.searchParams.get('api_key');
      if (!token) return refuse(new DomainError('missing_api_key', 'Missing API key: send `Authorization: Bearer <API_KEY>` or `?api_key=`.'));
      const key = await this.keys.authenticate(token);
      if (!key) return refuse(new DomainError('invalid_api_key', 'Incorrect API key provided.'));
      keyOfUpgrade.set(request, key);
      done(true);
    } catch (err) {
      this.logger.error({ err }, 'WebSocket authentication failed');
      refuse(new DomainError('database_unavailable', 'Authentication is unavailable; retry shortly.'));
    }
  }
}
