import { ArgumentMetadata, Injectable, Logger, type Type } from '@nestjs/common';
import {
  EXCEPTION_FILTERS_METADATA,
  GUARDS_METADATA,
  INTERCEPTORS_METADATA,
  PIPES_METADATA,
} from '@nestjs/common/constants';
import { ApplicationConfig } from '@nestjs/core';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { HttpLogger } from 'pino-http';
import { admitKnownProxyKey, authenticateProxyKey } from '../auth/auth.guard';
import { dropUnreadBody } from '../auth/credential-before-body';
import { GLOBAL_FILTERS, GLOBAL_GUARDS } from '../auth/global-pipeline';
import { renderError } from '../common/errors/api-error.filter';
import { toDomainError } from '../common/errors/domain-error';
import { isPlainJson, jsonBody, readPlainJson } from '../common/http/json-body';
import { assignRequestId } from '../common/http/request-id';
import { MiddlewareOf, type PipelineStep, type PipelineStepName } from '../common/http/request-pipeline';
import { requestLineWriter } from '../config/logging';
import { EnvironmentVariables } from '../config/env.schema';
import { FailoverInterceptor } from '../failover/failover.interceptor';
import { FailoverService } from '../failover/failover.service';
import { openHttpCall, type ProxiedCall } from '../failover/proxied-call';
import { AuthenticatedKey, KeyDirectory } from '../keys/key-directory';
import { MetricsService } from '../metrics/metrics.service';
import { RateLimiter } from '../quotas/rate-limiter.service';
import { parseChatRequest } from './chat-request';
import { ChatController } from './chat.controller';
import { ChatService } from './chat.service';

const CHAT_PATH = '/v1/chat/completions';
/** The metrics series of the fast path: the Nest route's template, so both count as one route. */
const CHAT_ROUTE = { path: CHAT_PATH };
/** What Nest hands the global pipes for the route's `@Body() body: unknown`. */
const BODY_METADATA: ArgumentMetadata = { type: 'body', metatype: Object, data: undefined };
const JSON_TYPE = /^application\/json\s*(?:;|$)/i;

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

interface FastRequest extends IncomingMessage {
  body?: unknown;
  route?: { path: string };
}

/** The request pipeline's steps as `handle` replays them, in order (src/common/http/request-pipeline.ts). */
export const REPLAYED_STEPS: readonly PipelineStepName[] = [
  'request-id',
  'request-line',
  'metrics',
  'credential-before-body',
  'json-body',
  'parser-errors',
  'unread-body',
];

const sameClasses = (instances: readonly object[], classes: readonly Type<unknown>[]): boolean =>
  instances.length === classes.length && instances.every((instance, i) => instance.constructor === classes[i]);

/**
 * `POST /v1/chat/completions` without Express routing, Nest's execution context and rxjs, for the plain case
 * (exact path, a JSON body): the steps of the Nest pipeline in its order, each done by the same code —
 * request id, the request log and metrics (the middlewares'), the key and its rate limit before the body
 * (credentialBeforeBody and the AuthGuard's `authenticateProxyKey`; MultipartOnUploadRoutes has nothing to refuse
 * on a JSON body), the JSON body parser, the route's FailoverInterceptor (the same ProxiedCall), the
 * application's global pipes themselves, `ChatService`, and the ApiErrorFilter's `renderError`.
 * The middleware steps are the declared request pipeline's (setupApp's `requestPipeline`): it replays them by
 * name, and a pipeline with a step it does not know is not replayed at all. On every request it checks that the
 * application's enhancers are still exactly those (GLOBAL_GUARDS, GLOBAL_FILTERS, no global interceptor, the
 * route's FailoverInterceptor alone) and that no middleware reaches the chat route but the declared ones (an
 * `app.use()` added later, a module's `configure(consumer)`): otherwise the request goes to Express, so nothing
 * added to the pipeline is ever skipped.
 */
@Injectable()
export class ChatFastPath {
  private readonly logger = new Logger('ApiErrorFilter');
  /** The request line's writer (made on first use: nestjs-pino sets the root logger when the application initialises). */
  private readonly requestLine: () => HttpLogger;
  /** The route's own enhancers are what the fast path replays (read once: decorators do not change). */
  private readonly routeReplayed = ChatFastPath.routeEnhancersReplayed();
  /** The declared pipeline is the one `handle` replays (set by `install`). */
  private pipelineReplayed = false;
  /** The middleware in front of the chat route, and what it may be: Nest's own (there at install) and the pipeline's. */
  private middleware: MiddlewareOf | null = null;
  private readonly knownMiddleware = new Set<unknown>();
  /** The router's size when its middleware was last looked at, and whether it was only the known then. */
  private checkedSize = -1;
  private middlewareKnown = false;
  private readonly pathLogger = new Logger(ChatFastPath.name);

  constructor(
    env: EnvironmentVariables,
    private readonly keys: KeyDirectory,
    private readonly rateLimiter: RateLimiter,
    private readonly failover: FailoverService,
    private readonly chat: ChatService,
    private readonly metrics: MetricsService,
    private readonly app: ApplicationConfig,
  ) {
    this.requestLine = requestLineWriter(env);
  }

  /** The plain case, while the pipeline is the one replayed: exact path, a JSON body that is there. */
  takes(req: IncomingMessage): boolean {
    if (req.method !== 'POST' || req.url !== CHAT_PATH) return false;
    const type = req.headers['content-type'];
    if (typeof type !== 'string' || !JSON_TYPE.test(type)) return false;
    if (req.headers['transfer-encoding'] === undefined && !(Number(req.headers['content-length'] ?? 0) > 0))
      return false;
    return this.replaysPipeline();
  }

  /** Whether the application's middleware and enhancers are exactly the ones this path replays. */
  replaysPipeline(): boolean {
    const app = this.app;
    return (
      this.routeReplayed &&
      this.pipelineReplayed &&
      this.onlyKnownMiddleware() &&
      sameClasses(app.getGlobalGuards(), GLOBAL_GUARDS) &&
      sameClasses(app.getGlobalFilters(), GLOBAL_FILTERS) &&
      app.getGlobalInterceptors().length === 0 &&
      app.getGlobalRequestGuards().length === 0 &&
      app.getGlobalRequestInterceptors().length === 0 &&
      app.getGlobalRequestPipes().length === 0 &&
      app.getGlobalRequestFilters().length === 0
    );
  }

  private static routeEnhancersReplayed(): boolean {
    const handler = Object.getOwnPropertyDescriptor(ChatController.prototype, 'create')?.value as object;
    const targets = [ChatController, handler];
    const none = (key: string): boolean => targets.every((t) => Reflect.getMetadata(key, t) === undefined);
    const interceptors = (Reflect.getMetadata(INTERCEPTORS_METADATA, handler) ?? []) as unknown[];
    return (
      none(GUARDS_METADATA) &&
      none(PIPES_METADATA) &&
      none(EXCEPTION_FILTERS_METADATA) &&
      Reflect.getMetadata(INTERCEPTORS_METADATA, ChatController) === undefined &&
      interceptors.length === 1 &&
      interceptors[0] === FailoverInterceptor
    );
  }

  /**
   * No middleware but the known reaches the chat route: looked at again only when the router grew (layers are
   * only appended), so a request pays one comparison.
   */
  private onlyKnownMiddleware(): boolean {
    const middleware = this.middleware;
    if (!middleware) return false;
    if (middleware.size === this.checkedSize) return this.middlewareKnown;
    this.checkedSize = middleware.size;
    this.middlewareKnown = middleware.handlers().every((handler) => this.knownMiddleware.has(handler));
    if (!this.middlewareKnown)
      this.pathLogger.warn(
        'a middleware outside the request pipeline reaches /v1/chat/completions: chat requests go through Express',
      );
    return this.middlewareKnown;
  }

  /**
   * Puts the fast path in front of the Express application (`expressApp`) on the same server (one call, from setupApp,
   * once `pipeline` is mounted on it).
   */
  install(server: Server, expressApp: unknown, pipeline: readonly PipelineStep[]): void {
    const names = pipeline.map((step) => step.name);
    this.pipelineReplayed = names.length === REPLAYED_STEPS.length && names.every((n, i) => n === REPLAYED_STEPS[i]);
    if (!this.pipelineReplayed)
      this.pathLogger.warn(
        `the request pipeline (${names.join(', ')}) is not the one the chat fast path replays (${REPLAYED_STEPS.join(', ')}): every chat request goes through Express`,
      );
    this.middleware = new MiddlewareOf(expressApp, CHAT_PATH);
    // what is mounted now: Nest's own (its adapter's response hook) and the pipeline's steps
    for (const handler of this.middleware.handlers()) this.knownMiddleware.add(handler);
    const listeners = server.listeners('request') as RequestListener[];
    if (listeners.length !== 1)
      throw new Error(`expected the Express application as the only request listener, found ${listeners.length}`);
    const [express] = listeners;
    server.removeListener('request', express);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (this.takes(req)) this.handle(req, res);
      else express(req, res);
    });
  }

  handle(req: FastRequest, res: ServerResponse): void {
    assignRequestId(req, res);
    // the request line first, as on the Express chain: a request refused before or at its body is logged too
    this.requestLine()(req, res);
    this.metrics.countOnClose(res);
    req.route = CHAT_ROUTE;
    // the key first, from the headers: an unauthenticated body is never read (credentialBeforeBody's rule);
    // a key this replica holds is read from memory with no promise (four per request), else the directory looks it up
    let known: AuthenticatedKey | null;
    try {
      known = admitKnownProxyKey(this.keys, this.rateLimiter, req.headers.authorization);
    } catch (err) {
      this.refuse(req, res, err);
      return;
    }
    if (known) return this.readBody(req, res, known);
    authenticateProxyKey(this.keys, this.rateLimiter, req.headers.authorization).then(
      (key) => this.readBody(req, res, key),
      (err: unknown) => this.refuse(req, res, err),
    );
  }

  /** A request refused before its body was read (no key, an unknown one, its rate limit). */
  private refuse(req: FastRequest, res: ServerResponse, err: unknown): void {
    dropUnreadBody(res);
    renderError(err, req, res, this.logger);
  }

  private readBody(req: FastRequest, res: ServerResponse, key: AuthenticatedKey): void {
    const bodyRead = (err?: unknown): void => {
      if (err) {
        renderError(toDomainError(err) ?? err, req, res, this.logger);
        return;
      }
      void this.serve(req, res, key);
    };
    // plain UTF-8 JSON is read directly (raw-body, as body-parser would); anything else by body-parser itself
    if (isPlainJson(req)) readPlainJson(req, bodyRead);
    else jsonBody(req, res, bodyRead);
  }

  private async serve(req: FastRequest, res: ServerResponse, key: AuthenticatedKey): Promise<void> {
    const call: ProxiedCall = openHttpCall(this.failover, req, res, key, 'chat');
    try {
      let body: unknown = req.body;
      for (const pipe of this.app.getGlobalPipes()) body = (await pipe.transform(body, BODY_METADATA)) as unknown;
      await this.chat.respond(call, parseChatRequest(body), res);
    } catch (err) {
      // the call's one owner (as the FailoverInterceptor is on the Nest route): recorded, then the error rendered
      call.endWithError(err);
      renderError(err, req, res, this.logger);
      return;
    }
    call.end();
  }
}
