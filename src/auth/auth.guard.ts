import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthenticatedKey, KeyDirectory } from '../keys/key-directory';
import { RateLimiter } from '../quotas/rate-limiter.service';
import { DomainError } from '../common/errors/domain-error';
import { AdminToken } from './admin-token';
import { adminApiDisabled } from './credential-before-body';
import { KeyedRequest } from './auth.decorators';
import { ADMIN_ROUTE, bearerToken, PUBLIC_ROUTE } from '../common/http/route-access';

const missing = (message = 'Missing API key: send the header `Authorization: Bearer <API_KEY>`.'): DomainError =>
  new DomainError('missing_api_key', message);

/** What a path that takes proxy keys may add to the check (the WebSocket upgrade: its stream count, its message). */
export interface ProxyKeyCheck {
  /** The message when no credential was sent (a path that also takes other credentials names them). */
  missing?: string;
  /** A refusal of the path's own, thrown before the key is counted by the rate limiter. */
  before?: (key: AuthenticatedKey) => void;
}

/**
 * A proxy key's `Authorization` header to its key, counted by the rate limiter: what the guard does
 * on every non-admin route, and what the chat fast path and the WebSocket upgrade call.
 */
export async function authenticateProxyKey(
  keys: KeyDirectory,
  rateLimiter: RateLimiter,
  authorization: string | string[] | undefined,
  check?: ProxyKeyCheck,
): Promise<AuthenticatedKey> {
  const token = bearerToken(authorization);
  if (!token) throw missing(check?.missing);
  const key = await keys.authenticate(token);
  if (!key) throw new DomainError('invalid_api_key', 'Incorrect API key provided.');
  return admitProxyKey(rateLimiter, key, check);
}

/**
 * `authenticateProxyKey` without a promise for a key this replica already holds (every request after a key's
 * first on it): the key, admitted by the rate limiter; null when the directory must look the secret up (then
 * `authenticateProxyKey` does). Throws what that would reject with: no credential, the rate limiter's refusal.
 */
export function admitKnownProxyKey(
  keys: KeyDirectory,
  rateLimiter: RateLimiter,
  authorization: string | string[] | undefined,
): AuthenticatedKey | null {
  const token = bearerToken(authorization);
  if (!token) throw missing();
  const key = keys.known(token);
  return key ? admitProxyKey(rateLimiter, key) : null;
}

/** A key already known (from its secret or a redeemed ticket) through the path's own check and the rate limiter. */
export function admitProxyKey(
  rateLimiter: RateLimiter,
  key: AuthenticatedKey,
  check?: ProxyKeyCheck,
): AuthenticatedKey {
  check?.before?.(key);
  rateLimiter.admit(key.id);
  return key;
}

/** One guard for every route: the admin token on admin routes, a proxy key everywhere else. */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly keys: KeyDirectory,
    private readonly admin: AdminToken,
    private readonly rateLimiter: RateLimiter,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)) return true;
    const request = context.switchToHttp().getRequest<KeyedRequest>();
    const token = bearerToken(request.headers.authorization);

    if (this.reflector.getAllAndOverride<boolean>(ADMIN_ROUTE, targets)) {
      if (!this.admin.value) throw adminApiDisabled();
      // Swagger UI sends only the scheme an operation names: say which credential this route wants
      if (!token)
        throw new DomainError(
          'missing_api_key',
          'This route needs the admin token: send `Authorization: Bearer <SVC_ADMIN_TOKEN>`.',
        );
      if (this.admin.matches(token)) return true;
      if (await this.keys.authenticate(token)) {
        throw new DomainError('admin_token_required', 'This route needs the admin token, not a proxy key.');
      }
      throw new DomainError('invalid_api_key', 'Incorrect admin token provided.');
    }

    request.proxyKey = await authenticateProxyKey(this.keys, this.rateLimiter, request.headers.authorization);
    return true;
  }
}
