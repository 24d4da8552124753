import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { requestIdOf } from './request-id';

/** The request's `req_` id (the one its response headers and request line carry), for the lines logged while serving it. */
export const RequestId = createParamDecorator((_: unknown, ctx: ExecutionContext): string =>
  requestIdOf(ctx.switchToHttp().getRequest<IncomingMessage>()),
);
