import type { NextFunction, Request, Response } from 'express';
import type { IncomingMessage } from 'node:http';
import { newRequestId } from '../ids';

export const REQUEST_ID_HEADER = 'x-svc-request-id';

interface WithId {
  id?: unknown;
}

/** First middleware of all: every response, even a malformed request's, carries its `req_` id. */
export function requestIdMiddleware(req: Request, res: Response, next: NextFunction): void {
  const id = newRequestId();
  (req as WithId).id = id;
  res.setHeader(REQUEST_ID_HEADER, id);
  next();
}

/** The request's id (pino-http reads it as its `genReqId`). */
export function requestIdOf(req: IncomingMessage): string {
  const id = (req as WithId).id;
  return typeof id === 'string' ? id : newRequestId();
}
