import { ArgumentMetadata, INestApplication, Logger } from '@nestjs/common';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { PinoLogger } from 'nestjs-pino';
import { storage, Store } from 'nestjs-pino/storage';
import { pinoHttp } from 'pino-http';
import type { HttpLogger } from 'pino-http';
import { authenticateProxyKey } from '../auth/auth.guard';
import { dropUnreadBody } from '../auth/credential-before-body';
import { renderError } from '../common/errors/api-error.filter';
import { toDomainError } from '../common/errors/domain-error';
import { isPlainJson, jsonBody, readPlainJson } from '../common/http/json-body';
import { assignRequestId } from '../common/http/request-id';
import { createValidationPipe } from '../common/http/validation';
import { httpLoggerOptions } from '../config/logging';
import { EnvironmentVariables } from '../config/env.schema';
import type { FailoverScope } from '../failover/failover-scope';
import { FailoverService } from '../failover/failover.service';
import { openProxyScope, proxyFailed, proxySucceeded } from '../failover/proxied-request';
import { AuthenticatedKey, KeyDirectory } from '../keys/key-directory';
import { RateLimiter } from '../quotas/rate-limiter.service';
import { MetricsService } from '../metrics/metrics.service';
import { parseChatRequest } from './chat-request';
import { ChatService } from './chat.service';

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

const CHAT_PATH = '/v1/chat/completions';
/** The metrics series of the fast path: the Nest route's template, so both count as one route. */
const CHAT_ROUTE = { path: CHAT_PATH };
/** What Nest hands the global pipe for the route's `@Body() body: unknown`. */
const BODY_METADATA: ArgumentMetadata = { type: 'body', metatype: Object, data: undefined };
const JSON_TYPE = /^application\/json\s*(?:;|$)/i;

interface FastRequest extends IncomingMessage {
  body?: unknown;
  route?: { path: string };
}

/**
 * `POST /v1/chat/completions` without Express routing, Nest's guard/interceptor/pipe chain and
 * rxjs: the same pieces in the same order (request id, metrics, JSON body parser, request log,
 * key and rate limit, failover scope, validation pipe, chat service, error rendering), called
 * directly. It takes only the plain case (exact path, a JSON body); anything else goes to Express.
 */
export class ChatFastPath {
  private readonly logger = new Logger('ApiErrorFilter');
  private readonly pipe = createValidationPipe();
  /** Made on first use: nestjs-pino sets the root logger when the application initialises. */
  private httpLogger: HttpLogger | null = null;

  constructor(
    private readonly env: EnvironmentVariables,
    private readonly keys: KeyDirectory,
    private readonly rateLimiter: RateLimiter,
    private readonly failover: FailoverService,
    private readonly chat: ChatService,
    private readonly metrics: MetricsService,
  ) {}

  /** The plain case: exact path, a JSON body that is there (an empty or non-JSON body gets Express's answers). */
  takes(req: IncomingMessage): boolean {
    if (req.method !== 'POST' || req.url !== CHAT_PATH) return false;
    const type = req.headers['content-type'];
    if (typeof type !== 'string' || !JSON_TYPE.test(type)) return false;
    return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  }

  handle(req: FastRequest, res: ServerResponse): void {
    assignRequestId(req, res);
    this.metrics.countOnClose(res);
    req.route = CHAT_ROUTE;
    // the key first, from the headers: an unauthenticated body is never read (credentialBeforeBody's rule)
    authenticateProxyKey(this.keys, this.rateLimiter, req.headers.authorization).then(
      (key) => this.readBody(req, res, key),
      (err: unknown) => {
        dropUnreadBody(res);
        renderError(err, req, res, this.logger);
      },
    );
  }

  private readBody(req: FastRequest, res: ServerResponse, key: AuthenticatedKey): void {
    const bodyRead = (err?: unknown): void => {
      if (err) {
        renderError(toDomainError(err) ?? err, req, res, this.logger);
        return;
      }
      const httpLogger = this.requestLogger();
      httpLogger(req, res);
      storage.run(new Store(req.log), () => void this.serve(req, res, key));
    };
    // plain UTF-8 JSON is read directly (raw-body, as body-parser would); anything else by body-parser itself
    if (isPlainJson(req)) readPlainJson(req, bodyRead);
    else jsonBody(req, res, bodyRead);
  }

  private async serve(req: FastRequest, res: ServerResponse, key: AuthenticatedKey): Promise<void> {
    let scope: FailoverScope | null = null;
    try {
      scope = openProxyScope(this.failover, req, res, key, 'chat');
      const body: unknown = await this.pipe.transform(req.body, BODY_METADATA);
      await this.chat.respond(scope, parseChatRequest(body), res);
      proxySucceeded(scope, res);
    } catch (err) {
      if (scope) proxyFailed(scope, res, err);
      renderError(err, req, res, this.logger);
    }
  }

  private requestLogger(): HttpLogger {
    this.httpLogger ??= pinoHttp({ ...httpLoggerOptions(this.env), logger: PinoLogger.root });
    return this.httpLogger;
  }
}

/** Puts the fast path in front of the Express application on the same server. */
export function installChatFastPath(app: INestApplication): void {
  const server = app.getHttpServer() as Server;
  const fast = new ChatFastPath(
    app.get(EnvironmentVariables),
    app.get(KeyDirectory),
    app.get(RateLimiter),
    app.get(FailoverService),
    app.get(ChatService),
    app.get(MetricsService),
  );
  const listeners = server.listeners('request') as RequestListener[];
  if (listeners.length !== 1)
    throw new Error(`expected the Express application as the only request listener, found ${listeners.length}`);
  const [express] = listeners;
  server.removeListener('request', express);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (fast.takes(req)) fast.handle(req, res);
    else express(req, res);
  });
}
