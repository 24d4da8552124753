import { INestApplicationContext, Logger } from '@nestjs/common';
import { WsAdapter } from '@nestjs/platform-ws';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import { DomainError } from '../errors/domain-error';
import { newRequestId } from '../ids';
import { REQUEST_ID_HEADER, SDK_REQUEST_ID_HEADER } from './request-id';

/** What Nest's adapter registers per gateway: a ws server without a port, and the path it serves. */
type PathServer = WebSocketServer & { path: string };

const logger = new Logger('WebSocketUpgrade');

/**
 * The log line of an upgrade refused with `error` (no HTTP request line is written for an upgrade): its id, as
 * the refusal's headers carry it, its status and code, and the path without its query (which may hold a credential).
 */
export function logRefusedUpgrade(request: IncomingMessage, error: DomainError, requestId: string): void {
  const path = (request.url ?? '/').split('?', 1)[0];
  logger.warn(
    { request_id: requestId, status: error.status, code: error.code, path },
    `refused a WebSocket upgrade to ${path} (${error.status} ${error.code}) as ${requestId}`,
  );
}

/** An HTTP answer written on the raw socket of an upgrade that will not become a WebSocket. */
export function refuseUpgrade(socket: Duplex, error: DomainError, requestId: string): void {
  const body = JSON.stringify(error.toBody());
  const head = [
    `HTTP/1.1 ${error.status} ${error.status === 404 ? 'Not Found' : 'Bad Request'}`,
    'Connection: close',
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `${REQUEST_ID_HEADER}: ${requestId}`,
    `${SDK_REQUEST_ID_HEADER}: ${requestId}`,
  ];
  socket.once('finish', () => socket.destroy());
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
}

/**
 * Nest's ws adapter, except for the upgrades it does not serve: an unknown path is answered with HTTP
 * 404 in the error shape (Nest's drops the socket without a word), and an alias path (MiniMax's own
 * `/ws/v1/t2a_v2`) is served by the gateway of the path it stands for.
 */
export class GatewayWsAdapter extends WsAdapter {
  constructor(
    app: INestApplicationContext,
    /** Alias path → the gateway path that serves it. */
    private readonly aliases: Record<string, string> = {},
  ) {
    super(app);
  }

  protected override ensureHttpServerExists(port: number, httpServer?: Server): Server | undefined {
    if (this.httpServersRegistry.has(port) || !httpServer) return super.ensureHttpServerExists(port, httpServer);
    this.httpServersRegistry.set(port, httpServer);
    httpServer.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.route(port, request, socket, head),
    );
    return httpServer;
  }

  private route(port: number, request: IncomingMessage, socket: Duplex, head: Buffer): void {
    let pathname: string;
    try {
      pathname = new URL(request.url ?? '/', 'http://localhost').pathname;
    } catch {
      return this.refuse(request, socket, new DomainError('invalid_value', 'The upgrade request has an invalid URL.'));
    }
    const servers = (this.wsServersRegistry.get(port) ?? []) as PathServer[];
    const served = this.aliases[pathname] ?? pathname;
    const server = servers.find((candidate) => candidate.path === served);
    if (!server) {
      const known = [...servers.map((s) => s.path), ...Object.keys(this.aliases)].join(', ');
      // the path only: a query string may hold a credential (?api_key=, ?ticket=)
      const error = new DomainError(
        'route_not_found',
        `Unknown WebSocket path: ${pathname}. WebSocket paths: ${known}.`,
      );
      return this.refuse(request, socket, error);
    }
    server.handleUpgrade(request, socket, head, (ws: WebSocket) => server.emit('connection', ws, request));
  }

  private refuse(request: IncomingMessage, socket: Duplex, error: DomainError): void {
    const requestId = newRequestId();
    logRefusedUpgrade(request, error, requestId);
    refuseUpgrade(socket, error, requestId);
  }
}
