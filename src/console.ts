import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Response } from 'express';
import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { projectRoot } from './common/paths';

export const CONSOLE_DIR = join(projectRoot(), 'console');
/** The committed AsyncAPI document (`npm run openapi` writes it from the code; a test keeps it current). */
export const ASYNCAPI_PATH = join(projectRoot(), 'asyncapi', 'asyncapi.json');

/**
 * Only the console's own files and the API of the same origin: no inline script, no other host (the
 * console works offline), audio from blob: URLs (what was heard, consent playback).
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "media-src 'self' blob:",
  "connect-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The console at /console/: static files, public (the key is pasted into the page, kept in the tab's
 * session storage, and sent only to this origin's API).
 */
export function serveConsole(app: NestExpressApplication): void {
  app.useStaticAssets(CONSOLE_DIR, {
    prefix: '/console',
    index: 'index.html',
    fallthrough: true,
    setHeaders: (res: ServerResponse) => {
      res.setHeader('Content-Security-Policy', CONSOLE_CSP);
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Referrer-Policy', 'no-referrer');
      res.setHeader('Cache-Control', 'no-cache');
    },
  });
}

/** The AsyncAPI document of the speech stream at /asyncapi.json, beside /openapi.json. */
export function serveAsyncApi(app: NestExpressApplication): void {
  let document: string | undefined;
  app
    .getHttpAdapter()
    .getInstance()
    .get('/asyncapi.json', (_req, res: Response) => {
      document ??= readFileSync(ASYNCAPI_PATH, 'utf8');
      res.type('application/json').send(document);
    });
}
