import { applyDecorators, CallHandler, createParamDecorator, ExecutionContext, Injectable, NestInterceptor, SetMetadata, UseInterceptors } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Response } from 'express';
import { catchError, Observable, tap, throwError } from 'rxjs';
import type { KeyedRequest } from '../common/auth/auth.decorators';
import { toDomainError } from '../common/errors/api-error.filter';
import { requestIdOf } from '../common/http/request-id';
import type { Capability } from '../config/provider-kinds';
import { FailoverScope } from './failover-scope';
import { FailoverService } from './failover.service';

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
    const scope = this.failover.openScope(requestIdOf(request), request.proxyKey, capability);
    request.failoverScope = scope;
    response.on('close', () => {
      if (!response.writableFinished) scope.abort();
    });
    return next.handle().pipe(
      tap(() => {
        if (scope.streaming) return;
        scope.applyHeaders(response);
        scope.finish({ status: response.statusCode });
      }),
      catchError((err: unknown) => {
        const error = toDomainError(err);
        if (!scope.streaming || !response.headersSent) scope.finish({ status: error?.status ?? 500 });
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
