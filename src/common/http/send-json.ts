import type { ServerResponse } from 'node:http';

/**
 * A JSON response on a plain Node response, as Express's `res.status().json()` writes it
 * (`application/json; charset=utf-8`, Content-Length): for the routes and the filter that must
 * also answer outside Express (the chat fast path).
 */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  sendJsonText(res, status, JSON.stringify(body));
}

/** `sendJson` of a body already serialised. */
export function sendJsonText(res: ServerResponse, status: number, text: string): void {
  res.statusCode = status;
  if (!res.hasHeader('content-type')) res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', String(Buffer.byteLength(text)));
  res.end(text);
}
