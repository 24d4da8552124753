import fc from 'fast-check';
import { FuzzFixtures, KNOWN_OPERATIONS } from './fixtures';
import type { Operation } from './openapi';
import { serialize, validValue } from './schema';

/** One HTTP request, as sent. `raw` requests are written to a socket byte for byte. */
export interface FuzzRequest {
  method: string;
  /** Already percent-encoded. */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  raw?: Buffer;
}

/** What a case must get back. Every answer must also be < 500, and every 4xx in the error shape. */
export interface Expectation {
  /** Accepted statuses; empty means any 4xx. */
  status: number[];
  codes?: string[];
  /** `param` of the error: exactly this, or (`prefix`) starting with it; absent means not checked. */
  param?: { exact: string | null } | { prefix: string };
  /** The request may be valid after all: a 2xx is accepted too. */
  maybeValid?: boolean;
  /** A public probe (readiness) may answer 503 in the error shape: that is its job, not a fault. */
  mayBeUnavailable?: boolean;
}

export interface FuzzCase {
  op: string;
  defect: string;
  request: FuzzRequest;
  expect: Expectation;
  [fc.toStringMethod]: () => string;
}

export interface Context {
  op: Operation;
  fixtures: FuzzFixtures;
  /** A valid request of the operation is known (fixture table and ids): errors must name their field. */
  known: boolean;
  /** Other methods the document lists on the same path. */
  methodsOnPath: string[];
}

export const anyClientError: Expectation = { status: [] };

/**
 * A case. Unless `strictAnyway` (defects the service finds before it reads the request, such as
 * credentials), an operation without a known valid request only has to answer some 4xx.
 */
export function makeCase(
  ctx: Context,
  defect: string,
  request: FuzzRequest,
  expect: Expectation,
  strictAnyway = false,
): FuzzCase {
  const loosened: Expectation = ctx.known || strictAnyway ? expect : { status: [], maybeValid: expect.maybeValid };
  // a public route answers what it answers to anything but broken HTTP
  const final =
    ctx.op.auth === 'none' && !request.raw ? { ...loosened, maybeValid: true, mayBeUnavailable: true } : loosened;
  return {
    op: ctx.op.key,
    defect,
    request,
    expect: final,
    [fc.toStringMethod]: () => `${ctx.op.key}: ${defect} (${request.method} ${request.path.slice(0, 160)})`,
  };
}

/** An id of the owner for a path parameter, or a well-formed one that exists nowhere. */
export const ownId = (fixtures: FuzzFixtures, name: string): string => fixtures.own[name] ?? 'xx_doesnotexist';

export function buildPath(op: Operation, segments: Record<string, string>): string {
  return op.path.replace(/\{([^}]+)\}/g, (_, name: string) => segments[name] ?? encodeURIComponent('xx_doesnotexist'));
}

export const validSegments = (ctx: Context): Record<string, string> =>
  Object.fromEntries(ctx.op.pathParams.map((p) => [p.name, encodeURIComponent(ownId(ctx.fixtures, p.name))]));

/** The query of a valid request: the required parameters only. */
export function validQuery(ctx: Context): Array<[string, string]> {
  return ctx.op.queryParams
    .filter((p) => p.required)
    .map((p) => [p.name, ctx.fixtures.query[p.name] ?? String(serialize(validValue(p.schema))).replace(/^"|"$/g, '')]);
}

export const queryString = (pairs: Array<[string, string]>): string =>
  pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')}`;

export function validAuth(ctx: Context): Record<string, string> {
  if (ctx.op.auth === 'none') return {};
  return { authorization: `Bearer ${ctx.op.auth === 'admin' ? ctx.fixtures.adminToken : ctx.fixtures.owner.secret}` };
}

/** The body of a valid request: JSON text with its content type, or a multipart form. */
export function validBodyValue(ctx: Context): Record<string, unknown> {
  return KNOWN_OPERATIONS[ctx.op.key]?.body ?? (validValue(ctx.op.body?.schema ?? {}) as Record<string, unknown>);
}

/** A valid request of the operation; families break one part of it. */
export function validRequest(ctx: Context): FuzzRequest {
  const request: FuzzRequest = {
    method: ctx.op.method,
    path: buildPath(ctx.op, validSegments(ctx)) + queryString(validQuery(ctx)),
    headers: validAuth(ctx),
  };
  if (ctx.op.body?.contentType === 'application/json') {
    request.headers['content-type'] = 'application/json';
    request.body = Buffer.from(JSON.stringify(validBodyValue(ctx)));
  }
  return request;
}
