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
import { catchError, Observable, tap, throwError } from 'rxjs';
import type { KeyedRequest } from '../auth/auth.decorators';
import type { Capability } from '../config/provider-kinds';
import { FailoverScope } from './failover-scope';
import { FailoverService } from './failover.service';
import { openProxyScope, proxyFailed, proxySucceeded } from './proxied-request';

const PROXIED = Symbol('proxied-capability');

interface ScopedRequest extends KeyedRequest {
  failoverScope?: FailoverScope;
}

/**
 * Around every proxied route: opens the request's failover scope (cancelled when the client
 * leaves), puts the x-svc-* headers on the response (errors included) and records usage once.
 */
@Injectable()
export class FailoverInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly failover: FailoverService,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const capability = this.reflector.get<Capability>(PROXIED, context.getHandler());
    const request = context.switchToHttp().getRequest<ScopedRequest>();
    const response = context.switchToHttp().getResponse<Response>();
    if (!request.proxyKey) throw new Error('FailoverInterceptor on a route without bearer authentication');
    const scope = openProxyScope(this.failover, request, response, request.proxyKey, capability);
    request.failoverScope = scope;
    return next.handle().pipe(
      tap(() => proxySucceeded(scope, response)),
      catchError((err: unknown) => {
        proxyFailed(scope, response, err);
        return throwError(() => err);
      }),
    );
  }
}

/** Marks a route as proxied through the failover core for a capability. */
export const Proxied = (capability: Capability): MethodDecorator =>
  applyDecorators(SetMetadata(PROXIED, capability), UseInterceptors(FailoverInterceptor));

/** The failover scope of the current proxied request. */
export const ProxyScope = createParamDecorator((_: unknown, ctx: ExecutionContext): FailoverScope => {
  const scope = ctx.switchToHttp().getRequest<ScopedRequest>().failoverScope;
  if (!scope) throw new Error('ProxyScope used on a route without @Proxied()');
  return scope;
});
