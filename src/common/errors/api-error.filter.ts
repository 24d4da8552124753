import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { DomainError } from './domain-error';
import { ErrorCode } from './error-codes';

/** body-parser and raw-body tag their errors with a `type`; map those to our codes. */
const PARSER_ERRORS: Record<string, { code: ErrorCode; message: string }> = {
  'entity.parse.failed': { code: 'invalid_json', message: 'The request body is not valid JSON.' },
  'entity.too.large': { code: 'body_too_large', message: 'The request body is larger than the 1 MiB limit.' },
  'encoding.unsupported': { code: 'unsupported_media_type', message: 'Unsupported content encoding.' },
  'charset.unsupported': { code: 'unsupported_media_type', message: 'Unsupported charset.' },
  'request.aborted': { code: 'invalid_value', message: 'The request was aborted by the client.' },
};

const CONNECTION_FAILURES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P03', '08006', '08001']);

/** Turns anything thrown into a DomainError, so every response has the documented error body. */
export function toDomainError(exception: unknown): DomainError | null {
  if (exception instanceof DomainError) return exception;
  const tagged = exception as { type?: unknown; code?: unknown; message?: unknown };
  if (typeof tagged?.type === 'string' && PARSER_ERRORS[tagged.type]) {
    const { code, message } = PARSER_ERRORS[tagged.type];
    return new DomainError(code, message);
  }
  if (exception instanceof HttpException) return fromHttpException(exception);
  if (typeof tagged?.code === 'string' && CONNECTION_FAILURES.has(tagged.code)) {
    return new DomainError('database_unavailable', 'The database is unavailable; retry shortly.');
  }
  if (typeof tagged?.message === 'string' && /Connection terminated|connection is not established|timeout exceeded when trying to connect/i.test(tagged.message)) {
    return new DomainError('database_unavailable', 'The database is unavailable; retry shortly.');
  }
  return null;
}

function fromHttpException(exception: HttpException): DomainError {
  const status = exception.getStatus();
  const message = exception.message;
  switch (status) {
    case 404:
      return new DomainError('route_not_found', message.startsWith('Cannot ') ? `Unknown route: ${message.slice(7)}.` : message);
    case 405:
      return new DomainError('method_not_allowed', message);
    case 413:
      return new DomainError('file_too_large', 'The uploaded file is larger than the 10 MiB limit.');
    case 415:
      return new DomainError('unsupported_media_type', message);
    default:
      // multer and Nest's own pipes raise 400s for malformed multipart or parameters
      if (status >= 400 && status < 500) return new DomainError('invalid_value', message, { status });
      return new DomainError('internal_error', 'The server had an error while processing the request.');
  }
}

/** Express error middleware for the body parsers: their tagged errors become DomainErrors before Nest sees them. */
export function parserErrorMiddleware(err: unknown, _req: Request, _res: Response, next: (err: unknown) => void): void {
  next(toDomainError(err) ?? err);
}

@Catch()
export class ApiErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('ApiErrorFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') return;
    const ctx = host.switchToHttp();
    const res = ctx.getResponse<Response>();
    const req = ctx.getRequest<Request>();
    const error =
      toDomainError(exception) ?? new DomainError('internal_error', 'The server had an error while processing the request.');
    if (error.status >= 500) {
      this.logger.error({ err: exception, code: error.code, path: req.originalUrl }, 'request failed');
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
    res.status(error.status).json(error.toBody());
  }
}
