import { SetMetadata } from '@nestjs/common';

export const PUBLIC_ROUTE = Symbol('public-route');
export const ADMIN_ROUTE = Symbol('admin-route');

/** No credentials needed (liveness, readiness). */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(PUBLIC_ROUTE, true);

/** Operator routes: the admin token, not a proxy key. */
export const AdminOnly = (): MethodDecorator & ClassDecorator => SetMetadata(ADMIN_ROUTE, true);

/** The token of `Authorization: Bearer <token>`, or null. */
export function bearerToken(header: string | string[] | undefined): string | null {
  if (typeof header !== 'string') return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : null;
}
