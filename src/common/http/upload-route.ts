import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { DomainError } from '../errors/domain-error';

const UPLOAD_ROUTE = 'svc:upload-route';

/** Marks a route that reads a multipart/form-data upload; every other route refuses one (415). */
export const UploadRoute = (): MethodDecorator => SetMetadata(UPLOAD_ROUTE, true);

/**
 * The JSON parser leaves a multipart body unread (the upload routes read it themselves), so on a JSON
 * route it would reach validation as an empty body and come back as a misleading "missing field".
 * Runs after the AuthGuard: an unauthenticated request still gets its 401 first.
 */
@Injectable()
export class MultipartOnUploadRoutes implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http') return true;
    const request = context.switchToHttp().getRequest<Request>();
    if (!request.is('multipart/form-data') || this.reflector.get<boolean>(UPLOAD_ROUTE, context.getHandler()))
      return true;
    throw new DomainError(
      'unsupported_media_type',
      'This endpoint takes an application/json body, not multipart/form-data.',
    );
  }
}
