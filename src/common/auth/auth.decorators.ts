import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import type { Request } from 'express';
import type { AuthenticatedKey } from '../../keys/key-directory';

export const PUBLIC_ROUTE = Symbol('public-route');
export const ADMIN_ROUTE = Symbol('admin-route');

/** No credentials needed (liveness, readiness). */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(PUBLIC_ROUTE, true);

/** Operator routes: the admin token, not a proxy key. */
export const AdminOnly = (): MethodDecorator & ClassDecorator => SetMetadata(ADMIN_ROUTE, true);

export interface KeyedRequest extends Request {
  proxyKey?: AuthenticatedKey;
}

/** The proxy key that authenticated the request. */
export const CurrentKey = createParamDecorator((_: unknown, ctx: ExecutionContext): AuthenticatedKey => {
  const key = ctx.switchToHttp().getRequest<KeyedRequest>().proxyKey;
  if (!key) throw new Error('CurrentKey used on a route without bearer authentication');
  return key;
});

/** The token of `Authorization: Bearer <token>`, or null. */
export function bearerToken(header: string | string[] | undefined): string | null {
  if (typeof header !== 'string') return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : null;
}
