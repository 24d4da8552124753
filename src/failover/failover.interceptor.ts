import {
  applyDecorators,
  CallHandler,
  createParamDecorator,
  ExecutionContext,
  Injectable,
  NestInterceptor,
  SetMetadata,
  UseInterceptors,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Response } from 'express';
import { Observable, tap } from 'rxjs';
import type { KeyedRequest } from '../auth/auth.decorators';
import type { Capability } from '../config/provider-kinds';
import { FailoverService } from './failover.service';
import { openHttpCall, ProxiedCall } from './proxied-call';

const PROXIED = Symbol('proxied-capability');

interface CallRequest extends KeyedRequest {
  proxiedCall?: ProxiedCall;
}

/**
 * Around every proxied Nest route: resolves the route's capability, opens its ProxiedCall (the one life of a
 * proxied request, cancelled when the client leaves) for the handler to run the chain through, and ends it:
 * the x-svc-* headers on the answer, errors included, and its usage recorded once (it is the call's one owner). The chat fast path opens
 * the same call for the requests it takes.
 */
@Injectable()
export class FailoverInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly failover: FailoverService,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const capability = this.reflector.get<Capability>(PROXIED, context.getHandler());
    const request = context.switchToHttp().getRequest<CallRequest>();
    const response = context.switchToHttp().getResponse<Response>();
    if (!request.proxyKey) throw new Error('FailoverInterceptor on a route without bearer authentication');
    const call = openHttpCall(this.failover, request, response, request.proxyKey, capability);
    request.proxiedCall = call;
    // the call's one owner: it ends it once the handler's promise settles (the handler only runs it)
    return next.handle().pipe(tap({ complete: () => call.end(), error: (err: unknown) => call.endWithError(err) }));
  }
}

/** Marks a route as proxied through the failover core for a capability. */
export const Proxied = (capability: Capability): MethodDecorator =>
  applyDecorators(SetMetadata(PROXIED, capability), UseInterceptors(FailoverInterceptor));

/** The ProxiedCall of the current request (a route marked `@Proxied()`). */
export const ProxyCall = createParamDecorator((_: unknown, ctx: ExecutionContext): ProxiedCall => {
  const call = ctx.switchToHttp().getRequest<CallRequest>().proxiedCall;
  if (!call) throw new Error('ProxyCall used on a route without @Proxied()');
  return call;
});
