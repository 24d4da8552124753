import type { NextFunction, Request, Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KeyDirectory } from '../keys/key-directory';
import { DomainError } from '../common/errors/domain-error';
import type { AdminToken } from './admin-token';
import { bearerToken } from '../common/http/route-access';

export const adminApiDisabled = (): DomainError =>
  new DomainError('admin_api_disabled', 'The admin API is off: set SVC_ADMIN_TOKEN to enable it.');

/** A request that says a body follows. */
export const announcesBody = (req: IncomingMessage): boolean =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/**
 * The credential of a request, checked from its headers alone: null when it is the admin token or a
 * known proxy key, else the 401 to answer. Which kind a route needs is the guard's business later.
 */
export async function credentialProblem(
  keys: KeyDirectory,
  admin: AdminToken,
  req: IncomingMessage,
): Promise<DomainError | null> {
  // no credential can pass there: say so now, as the guard would (Express routes /V1/Admin/ there too)
  if (!admin.value && req.url?.toLowerCase().startsWith('/v1/admin/')) return adminApiDisabled();
  const token = bearerToken(req.headers.authorization);
  if (!token)
    return new DomainError('missing_api_key', 'Missing API key: send the header `Authorization: Bearer <API_KEY>`.');
  if (admin.value && admin.matches(token)) return null;
  return (await keys.authenticate(token)) ? null : new DomainError('invalid_api_key', 'Incorrect API key provided.');
}

/** The connection is closed after this answer, so the unread body is never read off (nor waited for). */
export function dropUnreadBody(res: ServerResponse): void {
  if (!res.headersSent) res.setHeader('Connection', 'close');
}

/**
 * Before any body parser: a request that announces a body must carry a credential that authenticates,
 * or it is answered 401 at once and its body is never read (an anonymous client costs no buffer and no
 * wait for a slow upload). Every path, whatever its case (Express routes `/V1/...` as `/v1/...`) and
 * whether a route exists: no route takes a body without a bearer credential, and the public ones
 * (probes, docs, console, audio links) take none.
 */
export function credentialBeforeBody(keys: KeyDirectory, admin: AdminToken) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (!announcesBody(req)) {
      next();
      return;
    }
    credentialProblem(keys, admin, req).then(
      (problem) => {
        if (problem) dropUnreadBody(res);
        next(problem ?? undefined);
      },
      (err: unknown) => next(err),
    );
  };
}
