import type { IncomingMessage, ServerResponse } from 'node:http';
import { toDomainError } from '../common/errors/domain-error';
import { requestIdOf } from '../common/http/request-id';
import type { Capability } from '../config/provider-kinds';
import type { AuthenticatedKey } from '../keys/key-directory';
import type { FailoverScope } from './failover-scope';
import type { FailoverService } from './failover.service';

/**
 * The life of a proxied request around its handler, shared by the FailoverInterceptor (Nest routes)
 * and the chat fast path: open the scope (cancelled when the client leaves), then either
 * `proxySucceeded` or `proxyFailed`, which put the x-svc-* headers on and record usage once.
 */
export function openProxyScope(
  failover: FailoverService,
  req: IncomingMessage,
  res: ServerResponse,
  key: AuthenticatedKey,
  capability: Capability,
): FailoverScope {
  const scope = failover.openScope(requestIdOf(req), key, capability);
  res.on('close', () => {
    if (!res.writableFinished) scope.abort();
  });
  return scope;
}

/** The handler returned: a route that wrote its own body finished its scope itself. */
export function proxySucceeded(scope: FailoverScope, res: ServerResponse): void {
  if (scope.streaming) return;
  scope.applyHeaders(res);
  scope.finish({ status: res.statusCode });
}

/** The handler threw (the error is rendered by the caller): usage is recorded with the error's status. */
export function proxyFailed(scope: FailoverScope, res: ServerResponse, err: unknown): void {
  const error = toDomainError(err);
  if (!scope.streaming || !res.headersSent) scope.finish({ status: error?.status ?? 500 });
}
