import { json } from 'express';
import type { IncomingMessage } from 'node:http';
import { finished } from 'node:stream';
import getRawBody from 'raw-body';

export const JSON_BODY_LIMIT = '1mb';
/** The same limit in bytes (the `bytes` parser's reading of '1mb'). */
const JSON_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * The one JSON body parser (body-parser): the Express chain runs it after the request id, and the
 * chat fast path calls the same instance for any body that is not plain JSON (see `isPlainJson`),
 * so both read, limit and refuse bodies alike.
 */
export const jsonBody = json({ limit: JSON_BODY_LIMIT, type: ['application/json', 'application/*+json'] });

/** `application/json`, with no parameter or only `charset=utf-8`. */
const PLAIN_JSON_TYPE = /^application\/json\s*(?:;\s*charset\s*=\s*(?:utf-8|"utf-8")\s*)?$/i;
/** JSON's whitespace (RFC 8259): what may come before the first `{` or `[`. */
const LEADING_WHITESPACE = /^[ \t\n\r]*/;

/**
 * A body `readPlainJson` reads exactly as body-parser would: type `application/json`, UTF-8 (no
 * charset, or utf-8) and no content encoding. Anything else (gzip, another charset, `+json`) goes to
 * body-parser itself, whose inflating and decoding are not repeated here.
 */
export function isPlainJson(req: IncomingMessage): boolean {
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') return false;
  const type = req.headers['content-type'];
  return typeof type === 'string' && PLAIN_JSON_TYPE.test(type);
}

/** A body-parser-shaped error (http-errors fields, the text in `body`), so the error filter maps both readers' errors alike. */
function parseFailed(message: string, body: string): Error {
  return Object.assign(new SyntaxError(message), {
    status: 400,
    statusCode: 400,
    expose: true,
    type: 'entity.parse.failed',
    body,
  });
}

/** body-parser's strict JSON: an object or array (after a BOM and whitespace), an empty body as `{}`. */
export function parseStrictJson(raw: string): unknown {
  const text = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
  if (text.length === 0) return {};
  const first = text[0] === '{' || text[0] === '[' ? text[0] : text[LEADING_WHITESPACE.exec(text)?.[0].length ?? 0];
  if (first !== '{' && first !== '[') throw parseFailed('the body must be a JSON object or array', text);
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw parseFailed((err as Error).message, text);
  }
}

/**
 * Reads a plain JSON body (`isPlainJson`) into `req.body` with raw-body, as body-parser does (the same
 * limit, length and abort checks, the same error types) without its per-request type and charset
 * work, which the chat fast path's profile showed at about 4 % of a request. On an error the rest of
 * the body is read off before the error is answered, as body-parser does.
 */
export function readPlainJson(req: IncomingMessage & { body?: unknown }, done: (err?: unknown) => void): void {
  getRawBody(req, { length: req.headers['content-length'], limit: JSON_BODY_LIMIT_BYTES }, (err, buffer) => {
    if (err) {
      req.resume();
      finished(req, () => done(err));
      return;
    }
    try {
      req.body = parseStrictJson(buffer.toString('utf8'));
    } catch (parseError) {
      done(parseError);
      return;
    }
    done();
  });
}
