import type { NestApplicationOptions } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Server } from 'node:http';
import { SwaggerModule } from '@nestjs/swagger';
import { Logger } from 'nestjs-pino';
import { AdminToken } from './auth/admin-token';
import { credentialBeforeBody } from './auth/credential-before-body';
import { parserErrorMiddleware } from './common/errors/api-error.filter';
import { answerMalformedRequests } from './common/http/client-error';
import { GatewayWsAdapter } from './common/http/gateway-ws-adapter';
import { jsonBody } from './common/http/json-body';
import { requestIdMiddleware } from './common/http/request-id';
import type { PipelineStep } from './common/http/request-pipeline';
import { refuseUnreadBody } from './common/http/unread-body';
import { ChatFastPath } from './chat/chat-fast-path';
import { EnvironmentVariables } from './config/env.schema';
import { requestLineMiddleware } from './config/logging';
import { KeyDirectory } from './keys/key-directory';
import { MetricsService } from './metrics/metrics.service';
import { MINIMAX_STREAM_PATH, STREAM_PATH } from './speech/stream/speech-stream.gateway';
import { buildOpenApiDocument } from './openapi';
import { serveAsyncApi, serveConsole } from './console';

export { JSON_BODY_LIMIT } from './common/http/json-body';

/** Options for NestFactory.create: the body parser is ours, so it runs after the request id. */
export const APP_OPTIONS: NestApplicationOptions = { bufferLogs: true, bodyParser: false };

/**
 * Deadlines and a cap for what a client may hold: a slow or idle client is dropped instead of keeping
 * a connection and its buffers (Node checks the deadlines every 30 s, so a drop comes up to 30 s late).
 */
function applyServerDeadlines(server: Server, env: EnvironmentVariables): void {
  server.headersTimeout = env.SVC_HTTP_HEADERS_TIMEOUT_MS;
  server.requestTimeout = env.SVC_HTTP_REQUEST_TIMEOUT_MS;
  server.keepAliveTimeout = env.SVC_HTTP_KEEP_ALIVE_TIMEOUT_MS;
  server.maxConnections = env.SVC_HTTP_MAX_CONNECTIONS;
}

/**
 * The request pipeline in front of every route, in order: mounted on Express below, and replayed by the chat
 * fast path, which stands aside when this list holds a step it does not replay (src/common/http/request-pipeline.ts).
 */
export function requestPipeline(app: NestExpressApplication): PipelineStep[] {
  return [
    { name: 'request-id', handler: requestIdMiddleware },
    { name: 'request-line', handler: requestLineMiddleware(app.get(EnvironmentVariables)) },
    { name: 'metrics', handler: app.get(MetricsService).httpMiddleware },
    { name: 'credential-before-body', handler: credentialBeforeBody(app.get(KeyDirectory), app.get(AdminToken)) },
    { name: 'json-body', handler: jsonBody },
    { name: 'parser-errors', handler: parserErrorMiddleware },
    { name: 'unread-body', handler: refuseUnreadBody },
  ];
}

/** Everything main.ts and the e2e tests both need around the module graph. */
export function setupApp(app: NestExpressApplication): NestExpressApplication {
  app.useLogger(app.get(Logger));
  applyServerDeadlines(app.getHttpServer(), app.get(EnvironmentVariables));
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  const pipeline = requestPipeline(app);
  for (const step of pipeline) app.use(step.handler);
  answerMalformedRequests(app.getHttpServer());
  app.get(ChatFastPath).install(app.getHttpServer(), app.getHttpAdapter().getInstance(), pipeline);
  // MiniMax's own clients open /ws/v1/t2a_v2: the same stream (decisions §10)
  app.useWebSocketAdapter(new GatewayWsAdapter(app, { [MINIMAX_STREAM_PATH]: STREAM_PATH }));
  serveConsole(app);
  if (app.get(EnvironmentVariables).SVC_DOCS) {
    SwaggerModule.setup('docs', app, () => buildOpenApiDocument(app), {
      jsonDocumentUrl: 'openapi.json',
      swaggerOptions: { persistAuthorization: true },
    });
    serveAsyncApi(app);
  }
  return app;
}
