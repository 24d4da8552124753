import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request } from 'express';
import { Observable } from 'rxjs';
import { DomainError } from '../errors/domain-error';

/** Uploads must be multipart/form-data; anything else is a 415 before any body is read. */
@Injectable()
export class RequireMultipart implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    if (!request.is('multipart/form-data')) {
      throw new DomainError('unsupported_media_type', 'This endpoint takes a multipart/form-data upload.');
    }
    return next.handle();
  }
}
