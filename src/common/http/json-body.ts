import { json } from 'express';

export const JSON_BODY_LIMIT = '1mb';

/**
 * The one JSON body parser (body-parser): the Express chain runs it after the request id, and the
 * chat fast path calls the same instance, so both read, limit and refuse bodies alike.
 */
export const jsonBody = json({ limit: JSON_BODY_LIMIT, type: ['application/json', 'application/*+json'] });
