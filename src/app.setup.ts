import type { NestApplicationOptions } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { WsAdapter } from '@nestjs/platform-ws';
import { SwaggerModule } from '@nestjs/swagger';
import { Logger } from 'nestjs-pino';
import { parserErrorMiddleware } from './common/errors/api-error.filter';
import { answerMalformedRequests } from './common/http/client-error';
import { jsonBody } from './common/http/json-body';
import { requestIdMiddleware } from './common/http/request-id';
import { refuseUnreadBody } from './common/http/unread-body';
import { installChatFastPath } from './chat/chat-fast-path';
import { EnvironmentVariables } from './config/env.schema';
import { MetricsService } from './metrics/metrics.service';
import { buildOpenApiDocument } from './openapi';

export { JSON_BODY_LIMIT } from './common/http/json-body';

/** Options for NestFactory.create: the body parser is ours, so it runs after the request id. */
export const APP_OPTIONS: NestApplicationOptions = { bufferLogs: true, bodyParser: false };

/** Everything main.ts and the e2e tests both need around the module graph. */
export function setupApp(app: NestExpressApplication): NestExpressApplication {
  app.useLogger(app.get(Logger));
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(requestIdMiddleware);
  app.use(app.get(MetricsService).httpMiddleware);
  app.use(jsonBody);
  app.use(parserErrorMiddleware);
  app.use(refuseUnreadBody);
  answerMalformedRequests(app.getHttpServer());
  installChatFastPath(app);
  app.useWebSocketAdapter(new WsAdapter(app));
  if (app.get(EnvironmentVariables).SVC_DOCS) {
    SwaggerModule.setup('docs', app, () => buildOpenApiDocument(app), { jsonDocumentUrl: 'openapi.json', swaggerOptions: { persistAuthorization: true } });
  }
  return app;
}
