import fc from 'fast-check';
import { bodyCases } from './body-cases';
import { pathCases, queryCases } from './url-cases';
import type { Operation } from './openapi';
import { Context, Expectation, FuzzCase, makeCase, validRequest } from './request';

const expect401 = (code: string): Expectation => ({ status: [401], codes: [code], param: { exact: null } });

/** Absent, malformed, unknown, deleted and wrong-kind credentials on an otherwise valid request. */
function authCases(ctx: Context): fc.Arbitrary<FuzzCase> {
  const { fixtures, op } = ctx;
  const valid = op.auth === 'admin' ? fixtures.adminToken : fixtures.owner.secret;
  const withAuth = (label: string, header: string | null, expect: Expectation): FuzzCase => {
    const request = validRequest(ctx);
    if (header === null) delete request.headers.authorization;
    else request.headers.authorization = header;
    return makeCase(ctx, `auth: ${label}`, request, expect, true);
  };
  const garbage = fc.oneof(
    fc.string({
      unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~+/='.split('')),
      minLength: 1,
      maxLength: 80,
    }),
    fc.constantFrom(
      'x'.repeat(10 * 1024),
      'sk-svc-' + 'A'.repeat(40),
      '\u00ff\u00e9\u00e8',
      'null',
      'undefined',
      '%00',
      "'OR'1'='1",
    ),
  );
  const cases: Array<fc.Arbitrary<FuzzCase>> = [
    fc.constant(withAuth('no Authorization header', null, expect401('missing_api_key'))),
    fc
      .constantFrom(
        'Basic dXNlcjpwYXNz',
        'Bearer',
        'Token abc',
        `Bearer ${valid} ${valid}`,
        'sk-svc-no-scheme',
        `${valid}`,
        'Bearer\t',
      )
      .map((header) => withAuth(`not a Bearer header (${header.slice(0, 20)})`, header, expect401('missing_api_key'))),
    garbage.map((token) =>
      withAuth(`an unknown token (${token.length} chars)`, `Bearer ${token}`, expect401('invalid_api_key')),
    ),
    fc.constant(withAuth('a deleted key', `Bearer ${fixtures.deletedSecret}`, expect401('invalid_api_key'))),
    fc.constant(withAuth('a valid token with a character more', `Bearer ${valid}x`, expect401('invalid_api_key'))),
  ];
  if (op.auth === 'admin') {
    cases.push(
      fc.constant(
        withAuth('a proxy key on an admin route', `Bearer ${fixtures.owner.secret}`, {
          status: [403],
          codes: ['admin_token_required'],
          param: { exact: null },
        }),
      ),
    );
  } else {
    cases.push(
      fc.constant(
        withAuth('the admin token on a proxy-key route', `Bearer ${fixtures.adminToken}`, expect401('invalid_api_key')),
      ),
    );
  }
  return fc.oneof(...cases);
}

/** A method the document does not list for the path (a route the document misses must refuse it too). */
function methodCases(ctx: Context): fc.Arbitrary<FuzzCase> {
  const others = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => !ctx.methodsOnPath.includes(m));
  return fc
    .constantFrom(...others)
    .map((method) =>
      makeCase(ctx, `method ${method} on this path`, { ...validRequest(ctx), method }, { status: [] }, true),
    );
}

/** Bytes Node's HTTP parser refuses before any middleware runs. */
function rawCases(ctx: Context): fc.Arbitrary<FuzzCase> {
  const valid = validRequest(ctx);
  const head = (lines: string[]): Buffer => Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  const auth = valid.headers.authorization ? [`Authorization: ${valid.headers.authorization}`] : [];
  const raws: Array<{ label: string; raw: Buffer; status: number[] }> = [
    {
      label: 'headers over 16 KiB',
      raw: head([
        `GET ${valid.path} HTTP/1.1`,
        'Host: fuzz',
        ...auth,
        `X-Pad: ${'p'.repeat(20 * 1024)}`,
        'Connection: close',
      ]),
      status: [431],
    },
    {
      label: 'a raw 0xFF byte in the path',
      raw: head([`GET ${valid.path}\u00ff HTTP/1.1`, 'Host: fuzz', 'Connection: close']),
      status: [400],
    },
    {
      label: 'a header line without a colon',
      raw: head([`GET ${valid.path} HTTP/1.1`, 'Host: fuzz', 'Bad Header', 'Connection: close']),
      status: [400],
    },
    {
      label: 'a Content-Length that is no number',
      raw: head([`POST ${valid.path} HTTP/1.1`, 'Host: fuzz', 'Content-Length: abc', 'Connection: close']),
      status: [400],
    },
    {
      label: 'not HTTP at all',
      raw: Buffer.from('\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u0000\u00a1\u0003\u0003', 'latin1'),
      status: [400],
    },
  ];
  return fc
    .constantFrom(...raws)
    .map((r) =>
      makeCase(
        ctx,
        `raw HTTP: ${r.label}`,
        { method: 'RAW', path: valid.path, headers: {}, raw: r.raw },
        { status: r.status, codes: ['invalid_value', 'headers_too_large'] },
        true,
      ),
    );
}

/** Every generated case of one operation: one defect in an otherwise valid request. */
export function operationCases(ctx: Context): fc.Arbitrary<FuzzCase> {
  const { op } = ctx;
  const families: Array<{ arbitrary: fc.Arbitrary<FuzzCase>; weight: number }> = [
    { arbitrary: rawCases(ctx), weight: 1 },
  ];
  if (op.auth !== 'none') families.push({ arbitrary: authCases(ctx), weight: 6 });
  if (op.pathParams.length > 0) families.push({ arbitrary: pathCases(ctx), weight: 12 });
  if (op.queryParams.length > 0) families.push({ arbitrary: queryCases(ctx), weight: 12 });
  if (['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].some((m) => !ctx.methodsOnPath.includes(m)))
    families.push({ arbitrary: methodCases(ctx), weight: 2 });
  const body = bodyCases(ctx);
  if (body) families.push({ arbitrary: body, weight: 36 });
  return fc.oneof(...families);
}

/** How often an operation is picked: those with more to break (a body, parameters) more often. */
export const operationWeight = (op: Operation): number =>
  1 + (op.body ? 3 : 0) + (op.pathParams.length > 0 ? 1 : 0) + (op.queryParams.length > 0 ? 1 : 0);
