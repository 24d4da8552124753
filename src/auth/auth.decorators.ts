import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { AuthenticatedKey } from '../keys/key-directory';

export interface KeyedRequest extends Request {
  proxyKey?: AuthenticatedKey;
}

/** The proxy key that authenticated the request. */
export const CurrentKey = createParamDecorator((_: unknown, ctx: ExecutionContext): AuthenticatedKey => {
  const key = ctx.switchToHttp().getRequest<KeyedRequest>().proxyKey;
  if (!key) throw new Error('CurrentKey used on a route without bearer authentication');
  return key;
});
