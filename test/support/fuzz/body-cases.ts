import fc from 'fast-check';
import { Context, Expectation, FuzzCase, makeCase, validBodyValue, validRequest } from './request';
import { KNOWN_OPERATIONS } from './fixtures';
import { multipartCases } from './multipart-cases';
import type { Schema } from './openapi';
import { FieldMutation, fieldMutations, Json, MiB, serialize } from './schema';

type Path = Array<string | number>;

interface Field {
  path: Path;
  schema: Schema;
  required: boolean;
}

export const pathText = (path: Path): string =>
  path.reduce<string>((text, seg) => (typeof seg === 'number' ? `${text}[${seg}]` : text ? `${text}.${seg}` : seg), '');

const isObject = (v: unknown): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The fields present in a valid body, depth first, with their schemas (array items: the first one). */
function fieldsOf(schema: Schema, value: Json, path: Path = []): Field[] {
  const out: Field[] = [];
  if (isObject(value) && schema.properties) {
    for (const [name, child] of Object.entries(value)) {
      const childSchema = schema.properties[name] ?? {};
      out.push({ path: [...path, name], schema: childSchema, required: schema.required?.includes(name) ?? false });
      out.push(...fieldsOf(childSchema, child, [...path, name]));
    }
  }
  if (Array.isArray(value) && value.length > 0 && schema.items) {
    // an item is never left out or nulled: an emptier array may well be valid
    out.push({ path: [...path, 0], schema: schema.items, required: false });
    out.push(...fieldsOf(schema.items, value[0], [...path, 0]));
  }
  return out;
}

/** Objects of the body with declared properties and no free-form ones: where an unknown field must be refused. */
function containersOf(schema: Schema, value: Json, path: Path = []): Path[] {
  const out: Path[] = [];
  if (isObject(value) && schema.properties) {
    if (typeof schema.additionalProperties !== 'object' && schema.additionalProperties !== true) out.push(path);
    for (const [name, child] of Object.entries(value))
      out.push(...containersOf(schema.properties[name] ?? {}, child, [...path, name]));
  }
  if (Array.isArray(value) && value.length > 0 && schema.items)
    out.push(...containersOf(schema.items, value[0], [...path, 0]));
  return out;
}

/** A copy of `body` with the value at `path` replaced (or removed). */
function withValue(body: Json, path: Path, mutation: { value?: Json; remove?: boolean }): Json {
  const copy = JSON.parse(JSON.stringify(body)) as Json;
  let parent = copy as Record<string | number, Json>;
  for (const seg of path.slice(0, -1)) parent = parent[seg] as Record<string | number, Json>;
  const last = path[path.length - 1];
  if (mutation.remove) {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
  } else {
    parent[last] = mutation.value as Json;
  }
  return copy;
}

function expectationFor(outcome: FieldMutation['outcome'], param: string, container: boolean): Expectation {
  switch (outcome) {
    case 'invalid':
      // a broken object or array may be reported on one of its members
      return { status: [400], param: container ? { prefix: param } : { exact: param } };
    case 'missing':
      return { status: [400], codes: ['missing_field', 'invalid_value'], param: { exact: param } };
    case 'too_large':
      return { status: [413], codes: ['body_too_large'], param: { exact: null } };
    case 'maybe':
      return { status: [], maybeValid: true };
  }
}

/**
 * The body as JSON text with one more key in the object at `path`, spliced in as text: `__proto__`
 * must reach the parser as a key, which assigning it to an object would not keep.
 */
function serializeWithKey(value: Json, path: Path, name: string): string {
  if (path.length === 0) {
    const inner = serialize(value).slice(1, -1);
    return `{${inner}${inner ? ',' : ''}${JSON.stringify(name)}:1}`;
  }
  const [head, ...rest] = path;
  if (Array.isArray(value))
    return `[${value.map((v, i) => (i === head ? serializeWithKey(v, rest, name) : serialize(v))).join(',')}]`;
  const entries = Object.entries(value as Record<string, Json>).map(
    ([k, v]) => `${JSON.stringify(k)}:${k === head ? serializeWithKey(v, rest, name) : serialize(v)}`,
  );
  return `{${entries.join(',')}}`;
}

const UNKNOWN_NAMES = [
  'zzz_unknown',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'a'.repeat(300),
  '',
  'voice',
  'ünï',
];

/** Bodies that are not JSON of an object, or not sent as JSON. */
function rawBodies(
  ctx: Context,
  valid: string,
  hasRequired: boolean,
): Array<fc.Arbitrary<{ label: string; body: Buffer; type?: string; encoding?: string; expect: Expectation }>> {
  const invalidJson: Expectation = { status: [400], codes: ['invalid_json'], param: { exact: null } };
  const requiredOr = (expect: Expectation): Expectation => (hasRequired ? expect : { status: [], maybeValid: true });
  const text = (
    label: string,
    body: string,
    expect: Expectation,
    type = 'application/json',
  ): { label: string; body: Buffer; type: string; expect: Expectation } => ({
    label,
    body: Buffer.from(body, 'latin1'),
    type,
    expect,
  });
  const bytes = Buffer.from(valid);
  return [
    fc.integer({ min: 1, max: Math.max(1, bytes.length - 1) }).map((cut) => ({
      label: `JSON cut after ${cut} bytes`,
      body: bytes.subarray(0, cut),
      type: 'application/json',
      expect: invalidJson,
    })),
    fc.constantFrom(
      text('a trailing comma', valid.replace(/}$/, ',}'), invalidJson),
      text('single quotes', valid.replace(/"/g, "'"), invalidJson),
      text('NaN as a value', '{"a":NaN}', invalidJson),
      text('two objects', `${valid}${valid}`, invalidJson),
      text('a comment', `/* c */${valid}`, invalidJson),
      text('a raw control character in a string', '{"a":"\u0001"}', invalidJson),
      text('a bad escape', '{"a":"\\x41"}', invalidJson),
      text('invalid UTF-8 outside strings', `{\u00c3\u0028${valid.slice(1)}`, invalidJson),
      text('a JSON string', '"abc"', invalidJson),
      text('a JSON number', '42', invalidJson),
      text('JSON null', 'null', invalidJson),
      text('a JSON array', `[${valid}]`, { status: [400] }),
      text('an empty array', '[]', { status: [400] }),
      text('an empty object', '{}', requiredOr({ status: [400], codes: ['missing_field', 'invalid_value'] })),
      text('invalid UTF-8 inside a string', valid.replace(/":"([^"]*)"/, '":"$1\u00ff\u00fe"'), {
        status: [],
        maybeValid: true,
      }),
      text('a byte order mark', `\u00ef\u00bb\u00bf${valid}`, { status: [], maybeValid: true }),
      text('a body over 1 MiB', `{"pad":"${'p'.repeat(MiB + 10)}"}`, {
        status: [413],
        codes: ['body_too_large'],
        param: { exact: null },
      }),
      text('text/plain', valid, { status: [415], codes: ['unsupported_media_type'] }, 'text/plain'),
      text(
        'application/xml',
        '<name>x</name>',
        { status: [415], codes: ['unsupported_media_type'] },
        'application/xml',
      ),
      text(
        'a urlencoded form',
        'name=x&chain=y',
        { status: [415], codes: ['unsupported_media_type'] },
        'application/x-www-form-urlencoded',
      ),
      text(
        'application/octet-stream',
        valid,
        { status: [415], codes: ['unsupported_media_type'] },
        'application/octet-stream',
      ),
      text('no content type', valid, { status: [415], codes: ['unsupported_media_type'] }, ''),
      text(
        'a latin1 charset',
        valid,
        { status: [415], codes: ['unsupported_media_type'] },
        'application/json; charset=latin1',
      ),
      text('a utf-16 charset', valid, { status: [400, 415] }, 'application/json; charset=utf-16'),
      text('JSON sent as multipart', valid, requiredOr({ status: [400, 415] }), 'multipart/form-data; boundary=zzz'),
    ),
    fc.constantFrom('gzip', 'deflate', 'br').map((encoding) => ({
      label: `Content-Encoding ${encoding} on a plain body`,
      body: bytes,
      type: 'application/json',
      encoding,
      expect: { status: [400], codes: ['invalid_value'], param: { exact: null } },
    })),
    fc.constantFrom('zstd', 'compress', 'x-fuzz').map((encoding) => ({
      label: `unsupported Content-Encoding ${encoding}`,
      body: bytes,
      type: 'application/json',
      encoding,
      expect: { status: [415], codes: ['unsupported_media_type'] },
    })),
  ];
}

function jsonCases(ctx: Context): fc.Arbitrary<FuzzCase> {
  const schema = ctx.op.body?.schema ?? {};
  const base = validBodyValue(ctx) as Json;
  const passThrough = KNOWN_OPERATIONS[ctx.op.key]?.passThrough;
  const send = (
    defect: string,
    body: Buffer,
    expect: Expectation,
    type = 'application/json',
    encoding?: string,
  ): FuzzCase => {
    const request = validRequest(ctx);
    request.body = body;
    if (type) request.headers['content-type'] = type;
    else delete request.headers['content-type'];
    if (encoding) request.headers['content-encoding'] = encoding;
    return makeCase(ctx, defect, request, expect);
  };
  const fields = fieldsOf(schema, base);
  const fieldCase =
    fields.length === 0
      ? null
      : fc.constantFrom(...fields).chain((field) => {
          const param = pathText(field.path);
          const strictType = !passThrough || passThrough.checked.includes(param);
          const mutations = fieldMutations(
            field.schema,
            field.required,
            strictType,
            passThrough?.nullable?.includes(param),
          );
          return fc
            .oneof(...mutations.map((m) => ({ arbitrary: fc.constant(m), weight: m.outcome === 'too_large' ? 1 : 6 })))
            .map((m) => {
              const isItem = typeof field.path[field.path.length - 1] === 'number';
              // an array item's problem may be reported on the array (`each` rules), a container's on a member
              const reported =
                m.reportedAt === 'top'
                  ? pathText(field.path.slice(0, 1))
                  : isItem
                    ? pathText(field.path.slice(0, -1))
                    : param;
              const container =
                m.reportedAt !== 'top' &&
                (isItem ||
                  ['object', 'array'].includes(field.schema.type ?? (field.schema.properties ? 'object' : '')));
              return send(
                `${param} ${m.label}`,
                Buffer.from(serialize(withValue(base, field.path, m))),
                expectationFor(m.outcome, reported, container),
              );
            });
        });
  const containers = containersOf(schema, base);
  const unknownCase = fc
    .tuple(fc.constantFrom(...(containers.length > 0 ? containers : [[]])), fc.constantFrom(...UNKNOWN_NAMES))
    .map(([path, name]) => {
      const at = pathText([...path, name]);
      const expect: Expectation = passThrough
        ? { status: [], maybeValid: true }
        : { status: [400], codes: ['unknown_field'], param: { exact: at } };
      return send(`unknown field '${at.slice(0, 40)}'`, Buffer.from(serializeWithKey(base, path, name)), expect);
    });
  const valid = JSON.stringify(base);
  const raw = fc
    .oneof(...rawBodies(ctx, valid, (schema.required ?? []).length > 0))
    .map((r) => send(r.label, r.body, r.expect, r.type, r.encoding));
  const families = [
    { arbitrary: unknownCase, weight: 2 },
    { arbitrary: raw, weight: 3 },
  ];
  if (fieldCase) families.push({ arbitrary: fieldCase, weight: 6 });
  return fc.oneof(...families);
}

/** Cases of the request body, by the content type the operation takes; null when it takes none. */
export function bodyCases(ctx: Context): fc.Arbitrary<FuzzCase> | null {
  if (!ctx.op.body) return null;
  if (ctx.op.body.contentType === 'multipart/form-data') return multipartCases(ctx);
  if (ctx.op.body.contentType === 'application/json') return jsonCases(ctx);
  return null;
}
