import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Client, Pool } from 'pg';

/** One HTTP request the counter followed, and the SQL run on its behalf. */
export interface TracedRequest {
  method: string;
  url: string;
  /** Statements sent while the response was not finished yet: they delayed the answer. */
  beforeResponse: string[];
  /** Statements the request's own work sent after its response had finished. */
  afterResponse: string[];
  finished: boolean;
}

type Listener = (req: IncomingMessage, res: ServerResponse) => void;
type Method = (this: unknown, ...args: unknown[]) => unknown;

/**
 * Counts the SQL statements this process sends to PostgreSQL (every query of the `pg` driver:
 * TypeORM, pg-boss and the change feed all go through it) and attributes each to the HTTP request
 * whose work sent it, through an AsyncLocalStorage context opened when the request arrives.
 * Work started by timers (batch writers, syncs, job polling) runs outside any request.
 */
export class SqlCounter {
  /** Every statement seen, with the request it ran for (null: background work). */
  readonly statements: Array<{ sql: string; request: TracedRequest | null }> = [];
  readonly requests: TracedRequest[] = [];
  private readonly context = new AsyncLocalStorage<TracedRequest>();
  private readonly undo: Array<() => void> = [];

  static install(server: Server): SqlCounter {
    const counter = new SqlCounter();
    counter.patchDriver();
    counter.traceRequests(server);
    return counter;
  }

  /** The requests to `url` (path and query) seen so far. */
  requestsTo(url: string): TracedRequest[] {
    return this.requests.filter((r) => r.url === url);
  }

  uninstall(): void {
    for (const undo of this.undo.splice(0).reverse()) undo();
  }

  private record(sql: string): void {
    const request = this.context.getStore() ?? null;
    this.statements.push({ sql, request });
    if (request) (request.finished ? request.afterResponse : request.beforeResponse).push(sql);
  }

  private patchDriver(): void {
    const record = (sql: string): void => this.record(sql);
    this.patch(
      Client.prototype,
      'query',
      (original) =>
        function (this: unknown, ...args: unknown[]): unknown {
          const [first] = args;
          const text = typeof first === 'string' ? first : (first as { text?: unknown } | null)?.text;
          record(typeof text === 'string' ? text : '<submittable>');
          return original.apply(this, args);
        },
    );
    // a query waiting for a free pooled connection runs in the callback of whoever released one: keep the caller's context
    this.patch(
      Pool.prototype,
      'connect',
      (original) =>
        function (this: unknown, ...args: unknown[]): unknown {
          const [callback] = args;
          return typeof callback === 'function'
            ? original.call(this, AsyncResource.bind(callback as Method))
            : original.apply(this, args);
        },
    );
  }

  private traceRequests(server: Server): void {
    const listeners = server.listeners('request') as Listener[];
    server.removeAllListeners('request');
    const context = this.context;
    for (const listener of listeners) {
      server.on('request', (req: IncomingMessage, res: ServerResponse) => {
        const trace: TracedRequest = {
          method: req.method ?? '',
          url: req.url ?? '',
          beforeResponse: [],
          afterResponse: [],
          finished: false,
        };
        this.requests.push(trace);
        res.once('finish', () => (trace.finished = true));
        // the body arrives in socket events, outside the request's context: emit them inside it
        for (const emitter of [req, res]) {
          const emit = emitter.emit.bind(emitter) as (...args: unknown[]) => boolean;
          emitter.emit = ((...args: unknown[]) => context.run(trace, () => emit(...args))) as typeof emitter.emit;
        }
        context.run(trace, () => listener(req, res));
      });
    }
    this.undo.push(() => {
      server.removeAllListeners('request');
      for (const listener of listeners) server.on('request', listener);
    });
  }

  private patch(target: object, name: string, wrap: (original: Method) => Method): void {
    const own = Object.getOwnPropertyDescriptor(target, name);
    const original = (target as Record<string, Method>)[name];
    Object.defineProperty(target, name, { value: wrap(original), configurable: true, writable: true });
    this.undo.push(() => {
      if (own) Object.defineProperty(target, name, own);
      else delete (target as Record<string, Method>)[name];
    });
  }
}
