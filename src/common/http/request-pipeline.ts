import type { ErrorRequestHandler, RequestHandler } from 'express';

/**
 * The steps every HTTP request goes through before its route, in order. The list is declared once (setupApp's
 * `requestPipeline`): Express mounts it as it is, and the chat fast path (src/chat/chat-fast-path.ts) replays it
 * step by step, by these names. A step the fast path does not replay, or a middleware that reaches a request by
 * any other way (a later `app.use()`, a module's `configure(consumer)`), makes it stand aside for Express.
 */
export type PipelineStepName =
  | 'request-id'
  | 'request-line'
  | 'metrics'
  | 'credential-before-body'
  | 'json-body'
  | 'parser-errors'
  | 'unread-body';

export interface PipelineStep {
  readonly name: PipelineStepName;
  readonly handler: RequestHandler | ErrorRequestHandler;
}

/** The part of an Express router layer that tells whether (and how) it takes a request for a path. */
interface RouterLayer {
  handle: unknown;
  route?: { path: string };
  match(path: string): unknown;
}

/** An Express 5 application, as far as reading its router goes. */
interface ExpressLike {
  router: { stack: RouterLayer[] };
}

/**
 * The middleware that runs before `path`'s route on an Express application: every layer in front of that route
 * (or every layer, when there is none yet) that takes requests for `path`.
 */
export class MiddlewareOf {
  private readonly stack: RouterLayer[];

  constructor(
    express: unknown,
    private readonly path: string,
  ) {
    this.stack = (express as ExpressLike).router.stack;
  }

  /** The router's layer count: a middleware is only ever appended, so an unchanged count is an unchanged router. */
  get size(): number {
    return this.stack.length;
  }

  handlers(): unknown[] {
    const found: unknown[] = [];
    for (const layer of this.stack) {
      if (layer.route?.path === this.path) break;
      if (!layer.route && layer.match(this.path)) found.push(layer.handle);
    }
    return found;
  }
}
