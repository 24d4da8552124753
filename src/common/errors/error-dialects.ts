import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DomainError } from './domain-error';

/**
 * Another API's error format on the routes that imitate it (MiniMax's `base_resp` on its native routes):
 * registered by the module that owns those routes, so the one renderer answers every error of theirs,
 * the body parser's and the guard's included.
 */
export interface ErrorDialect {
  /** Whether the route at `path` (no query string) answers its errors in this format. */
  owns(path: string): boolean;
  /** Whether the route is proxied: its errors name who served (or `none`), as the interface's proxied routes do. */
  proxied(path: string): boolean;
  /** The status and body of the error's answer; null to answer it as the interface does (an unknown route). */
  answer(error: DomainError, req: IncomingMessage, res: ServerResponse): { status: number; body: unknown } | null;
}

const dialects = new Set<ErrorDialect>();

export function registerErrorDialect(dialect: ErrorDialect): void {
  dialects.add(dialect);
}

export function dialectFor(path: string): ErrorDialect | null {
  for (const dialect of dialects) if (dialect.owns(path)) return dialect;
  return null;
}
