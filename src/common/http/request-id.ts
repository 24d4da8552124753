import type { NextFunction, Request, Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startTime } from 'pino-http';
import { newRequestId } from '../ids';

export const REQUEST_ID_HEADER = 'x-svc-request-id';
/**
 * The same id under the name the official OpenAI SDKs read: `completion._request_id`,
 * `.withResponse().request_id` and `APIError.requestID` then name this gateway's request.
 */
export const SDK_REQUEST_ID_HEADER = 'x-request-id';

interface WithId {
  id?: unknown;
}

/**
 * Gives the request its `req_` id and puts it on the response (the Express chain and the chat fast path), and
 * marks its arrival: the request line's response time counts from here, before the body is read, however
 * late its logger is made.
 */
export function assignRequestId(req: IncomingMessage, res: ServerResponse): string {
  res[startTime] = Date.now();
  const id = newRequestId();
  (req as WithId).id = id;
  res.setHeader(REQUEST_ID_HEADER, id);
  res.setHeader(SDK_REQUEST_ID_HEADER, id);
  return id;
}

/** First middleware of all: every response, even a malformed request's, carries its `req_` id. */
export function requestIdMiddleware(req: Request, res: Response, next: NextFunction): void {
  assignRequestId(req, res);
  next();
}

/** The request's id (pino-http reads it as its `genReqId`). */
export function requestIdOf(req: IncomingMessage): string {
  const id = (req as WithId).id;
  return typeof id === 'string' ? id : newRequestId();
}
