import fc from 'fast-check';
import type { FuzzFixtures } from './fixtures';
import type { Parameter, Schema } from './openapi';
import {
  buildPath,
  Context,
  Expectation,
  FuzzCase,
  makeCase,
  queryString,
  validQuery,
  validRequest,
  validSegments,
} from './request';

// The cases that break a request's URL: its path parameters (ids) and its query. The other families: cases.ts.

/** Odd ids as they go on the wire; `expect` given the parameter's name. */
const ODD_IDS: Array<{ label: string; segment: string; expect: (name: string) => Expectation }> = [
  { label: '../', segment: '..', expect: () => ({ status: [404], codes: ['resource_not_found', 'route_not_found'] }) },
  {
    label: '../.. (two segments)',
    segment: '../..',
    expect: () => ({ status: [404], codes: ['resource_not_found', 'route_not_found'] }),
  },
  {
    label: 'encoded ../../etc/passwd',
    segment: '..%2F..%2Fetc%2Fpasswd',
    expect: (n) => ({ status: [404], codes: ['resource_not_found'], param: { exact: n } }),
  },
  { label: '%00', segment: '%00', expect: (n) => ({ status: [400], codes: ['invalid_value'], param: { exact: n } }) },
  {
    label: 'an id with %00 inside',
    segment: 'vc_abc%00def',
    expect: (n) => ({ status: [400], codes: ['invalid_value'], param: { exact: n } }),
  },
  { label: 'invalid UTF-8 (%C3%28)', segment: '%C3%28', expect: () => ({ status: [400], codes: ['invalid_value'] }) },
  {
    label: 'a truncated escape (%E0%A4%A)',
    segment: '%E0%A4%A',
    expect: () => ({ status: [400], codes: ['invalid_value'] }),
  },
  { label: 'a bad escape (%ZZ)', segment: '%ZZ', expect: () => ({ status: [400], codes: ['invalid_value'] }) },
  {
    label: 'an encoded lone surrogate',
    segment: '%ED%A0%80',
    expect: () => ({ status: [400], codes: ['invalid_value'] }),
  },
  {
    label: 'an emoji',
    segment: '%F0%9F%98%80',
    expect: (n) => ({ status: [404], codes: ['resource_not_found'], param: { exact: n } }),
  },
  {
    label: 'a 10 KB id',
    segment: 'a'.repeat(10 * 1024),
    expect: (n) => ({ status: [404], codes: ['resource_not_found'], param: { exact: n } }),
  },
  {
    label: 'a newline',
    segment: 'vc_%0Aabc',
    expect: (n) => ({ status: [404], codes: ['resource_not_found'], param: { exact: n } }),
  },
  {
    label: 'SQL',
    segment: encodeURIComponent("x' OR '1'='1"),
    expect: (n) => ({ status: [404], codes: ['resource_not_found'], param: { exact: n } }),
  },
  {
    label: 'an encoded slash',
    segment: 'a%2Fb',
    expect: (n) => ({ status: [404], codes: ['resource_not_found'], param: { exact: n } }),
  },
];

/** Ids of nobody, of another key, and odd ones, in one path parameter of an otherwise valid request. */
export function pathCases(ctx: Context): fc.Arbitrary<FuzzCase> {
  const { fixtures, op } = ctx;
  const withSegment = (
    param: Parameter,
    label: string,
    segment: string,
    expect: Expectation,
    auth?: string,
  ): FuzzCase => {
    const request = validRequest(ctx);
    request.path = buildPath(op, { ...validSegments(ctx), [param.name]: segment }) + queryString(validQuery(ctx));
    if (auth) request.headers.authorization = auth;
    return makeCase(ctx, `${param.name}: ${label}`, request, expect);
  };
  const notFound = (name: string): Expectation => ({
    status: [404],
    codes: ['resource_not_found'],
    param: { exact: name },
  });
  return fc.constantFrom(...op.pathParams).chain((param) => {
    const prefix = (fixtures.own[param.name] ?? 'xx_').split('_')[0];
    const options: Array<fc.Arbitrary<FuzzCase>> = [
      fc.constantFrom(...ODD_IDS).map((odd) => withSegment(param, odd.label, odd.segment, odd.expect(param.name))),
      fc
        .string({
          unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789'.split('')),
          minLength: 1,
          maxLength: 30,
        })
        .map((rest) => withSegment(param, 'an id that does not exist', `${prefix}_${rest}`, notFound(param.name))),
    ];
    const foreign = fixtures.foreign[param.name];
    if (foreign && op.auth === 'proxy') {
      options.push(
        fc.constant(withSegment(param, "another key's id", encodeURIComponent(foreign), notFound(param.name))),
      );
      const own = fixtures.own[param.name];
      if (own)
        options.push(
          fc.constant(
            withSegment(
              param,
              'asked by another key',
              encodeURIComponent(own),
              notFound(param.name),
              `Bearer ${fixtures.other.secret}`,
            ),
          ),
        );
    }
    return fc.oneof(...options);
  });
}

/** Bad values for a query parameter, as strings on the wire. */
function queryValues(
  param: Parameter,
  fixtures: FuzzFixtures,
): Array<{ label: string; value: string; codes?: string[] }> {
  const s: Schema = param.schema;
  const out: Array<{ label: string; value: string; codes?: string[] }> = [];
  if (s.type === 'number' || s.type === 'integer') {
    if (s.minimum !== undefined) out.push({ label: 'below its minimum', value: String(s.minimum - 1) });
    if (s.maximum !== undefined) out.push({ label: 'above its maximum', value: String(s.maximum + 1) });
    out.push(
      ...['abc', '', '2.5', '1e400', '9'.repeat(400), 'NaN', '[]', '1 1', '-'].map((value) => ({
        label: `'${value.slice(0, 12)}'`,
        value,
      })),
    );
  } else {
    if ((s.minLength ?? 0) > 0) out.push({ label: 'empty', value: '' });
    if (s.maxLength !== undefined) out.push({ label: 'longer than maxLength', value: 'q'.repeat(s.maxLength + 1) });
    if (s.pattern) out.push({ label: 'not matching its pattern', value: 'NOT_AN_ID!' });
    out.push(
      { label: 'with a NUL', value: 'a\u0000b' },
      { label: 'a 10 KB value', value: 'q'.repeat(10 * 1024), codes: ['invalid_value', 'invalid_cursor'] },
    );
    if (param.name === 'after') {
      out.push({ label: 'an id that does not exist', value: 'xx_doesnotexist', codes: ['invalid_cursor'] });
      for (const id of Object.values(fixtures.foreign))
        out.push({ label: "another key's id", value: id, codes: ['invalid_cursor'] });
    }
  }
  return out;
}

/** Bad values, repeats, unknown and missing parameters in the query of an otherwise valid request. */
export function queryCases(ctx: Context): fc.Arbitrary<FuzzCase> {
  const { op, fixtures } = ctx;
  const withQuery = (label: string, pairs: Array<[string, string]>, expect: Expectation): FuzzCase => {
    const request = validRequest(ctx);
    request.path = buildPath(op, validSegments(ctx)) + queryString(pairs);
    return makeCase(ctx, `query: ${label}`, request, expect);
  };
  const base = validQuery(ctx);
  const without = (name: string): Array<[string, string]> => base.filter(([k]) => k !== name);
  const invalid = (name: string, codes = ['invalid_value']): Expectation => ({
    status: [400],
    codes,
    param: { exact: name },
  });
  const perParam = fc.constantFrom(...op.queryParams).chain((param) => {
    const good = fixtures.query[param.name] ?? 'xx_doesnotexist';
    return fc.oneof(
      fc
        .constantFrom(...queryValues(param, fixtures))
        .map((v) =>
          withQuery(
            `${param.name} ${v.label}`,
            [...without(param.name), [param.name, v.value]],
            invalid(param.name, v.codes),
          ),
        ),
      fc.constant(
        withQuery(
          `${param.name} twice`,
          [...without(param.name), [param.name, good], [param.name, good]],
          invalid(param.name, ['invalid_value', 'invalid_cursor']),
        ),
      ),
      fc.constant(
        param.required
          ? withQuery(`${param.name} left out`, without(param.name), {
              status: [400],
              codes: ['missing_field', 'invalid_value'],
              param: { exact: param.name },
            })
          : withQuery(`${param.name}[] bracket syntax`, [...base, [`${param.name}[]`, '1']], {
              status: [400],
              codes: ['unknown_field'],
              param: { exact: `${param.name}[]` },
            }),
      ),
    );
  });
  const unknown = fc
    .constantFrom('order', '__proto__', 'constructor', 'limit[$gt]', 'a'.repeat(300), 'ünïcode')
    .map((name) =>
      withQuery(`unknown parameter ${name.slice(0, 20)}`, [...base, [name, '1']], {
        status: [400],
        codes: ['unknown_field'],
        param: { exact: name },
      }),
    );
  return fc.oneof(perParam, unknown);
}
