import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isProxiedPath, UNSERVED_HEADERS } from '../http/proxied-routes';
import { sendJson } from '../http/send-json';
import { pathOnly, scrubUrl } from '../http/scrub-url';
import { DomainError, toDomainError } from './domain-error';
import { dialectFor } from './error-dialects';

/** Express error middleware for the body parsers: their tagged errors become DomainErrors before Nest sees them. */
export function parserErrorMiddleware(err: unknown, _req: Request, _res: Response, next: (err: unknown) => void): void {
  next(toDomainError(err) ?? err);
}

/**
 * Whatever was thrown, answered in the documented error shape (server faults logged): the filter's
 * work, shared with the chat fast path, which answers outside Nest.
 */
export function renderError(
  exception: unknown,
  req: IncomingMessage & { originalUrl?: string },
  res: ServerResponse,
  logger: Logger,
): void {
  // the client left (its call was recorded as 499): there is nobody to answer
  if (res.destroyed) return;
  const error =
    toDomainError(exception) ??
    new DomainError('internal_error', 'The server had an error while processing the request.');
  if (error.status >= 500) {
    logger.error(
      {
        err: exception,
        code: error.code,
        path: scrubUrl(req.originalUrl ?? req.url),
        request_id: (req as { id?: unknown }).id,
      },
      'request failed',
    );
  }
  if (res.headersSent) {
    res.end();
    return;
  }
  const url = req.originalUrl ?? req.url ?? '';
  const dialect = dialectFor(pathOnly(url));
  // an error of a proxied route names no provider unless the failover core said who answered (or how far it got)
  if (
    !error.headers['x-svc-provider-used'] &&
    !res.hasHeader('x-svc-provider-used') &&
    (isProxiedPath(url) || dialect?.proxied(pathOnly(url)))
  ) {
    for (const [name, value] of Object.entries(UNSERVED_HEADERS)) res.setHeader(name, value);
  }
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  const answer = dialect?.answer(error, req, res) ?? { status: error.status, body: error.toBody() };
  sendJson(res, answer.status, answer.body);
}

@Catch()
export class ApiErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('ApiErrorFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') return;
    const ctx = host.switchToHttp();
    renderError(exception, ctx.getRequest<Request>(), ctx.getResponse<Response>(), this.logger);
  }
}
