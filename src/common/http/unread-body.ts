import type { NextFunction, Request, Response } from 'express';
import { DomainError } from '../errors/domain-error';

const WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const hasContent = (req: Request): boolean =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/**
 * After the JSON parser: a body it did not take (text/plain, a urlencoded form, no type at all) is a
 * 415, not a "missing field" or, on a route whose fields are all optional, a silent no-op. Multipart
 * is left to the upload routes, which read it (MultipartOnUploadRoutes refuses it on every other route).
 */
export function refuseUnreadBody(req: Request, _res: Response, next: NextFunction): void {
  if (!WITH_BODY.has(req.method) || req.body !== undefined || !hasContent(req) || req.is('multipart/form-data')) {
    next();
    return;
  }
  next(
    new DomainError(
      'unsupported_media_type',
      'Send the request body as application/json (uploads: multipart/form-data).',
    ),
  );
}
