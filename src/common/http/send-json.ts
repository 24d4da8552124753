import type { ServerResponse } from 'node:http';

/**
 * A JSON response on a plain Node response, as Express's `res.status().json()` writes it
 * (`application/json; charset=utf-8`, Content-Length): for the routes and the filter that must
 * also answer outside Express (the chat fast path).
 */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  if (!res.hasHeader('content-type')) res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', String(Buffer.byteLength(text)));
  res.end(text);
}
