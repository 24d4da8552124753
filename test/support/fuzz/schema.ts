import type { Schema } from './openapi';

export const MiB = 1024 * 1024;

/** A JSON value as it will be written; `Raw` is text spliced in as is (numbers JSON.stringify cannot write). */
export class Raw {
  constructor(readonly text: string) {}
}

export type Json = null | boolean | number | string | Raw | Json[] | { [key: string]: Json };

/** What the service must answer to a mutation of one field of an otherwise valid request. */
export type Outcome =
  /** 400 naming the field (or its top-level field for nesting). */
  | 'invalid'
  /** 400 `missing_field` naming the field. */
  | 'missing'
  /** 413: the body is over the 1 MiB limit. */
  | 'too_large'
  /** A value the schema does not rule out: any 4xx, or a 2xx. */
  | 'maybe';

export interface FieldMutation {
  label: string;
  /** Undefined with `remove`: the field is left out. */
  value?: Json;
  remove?: boolean;
  outcome: Outcome;
  /** The field a nesting problem is reported on (the top-level one), when not the mutated one. */
  reportedAt?: 'top';
}

const typeOf = (schema: Schema): string => {
  if (schema.type) return schema.type;
  if (schema.properties) return 'object';
  if (schema.enum) return typeof schema.enum[0] === 'number' ? 'number' : 'string';
  return 'unknown';
};

/** A value the schema accepts (used where no fixture says better): example, default, first enum value, or the smallest. */
export function validValue(schema: Schema, depth = 0): Json {
  if (schema.example !== undefined) return schema.example as Json;
  if (schema.default !== undefined) return schema.default as Json;
  if (schema.enum?.length) return schema.enum[0] as Json;
  if (schema.oneOf?.length) return validValue(schema.oneOf[0], depth + 1);
  switch (typeOf(schema)) {
    case 'string': {
      const candidates = ['a'.repeat(Math.max(1, schema.minLength ?? 1)), 'req_a', 'a1', 'en-US'];
      const pattern = schema.pattern ? new RegExp(schema.pattern) : null;
      return candidates.find((c) => !pattern || pattern.test(c)) ?? candidates[0];
    }
    case 'integer':
    case 'number': {
      const min = typeof schema.minimum === 'number' ? schema.minimum + (schema.exclusiveMinimum === true ? 1 : 0) : 1;
      return typeof schema.maximum === 'number' ? Math.min(min, schema.maximum) : min;
    }
    case 'boolean':
      return true;
    case 'array': {
      if (depth > 6) return [];
      const items = schema.items ?? {};
      const count = schema.minItems ?? 0;
      return items.enum
        ? (items.enum.slice(0, Math.max(1, count)) as Json[])
        : Array.from({ length: count }, () => validValue(items, depth + 1));
    }
    case 'object': {
      if (depth > 6) return {};
      const out: Record<string, Json> = {};
      for (const name of schema.required ?? []) out[name] = validValue(schema.properties?.[name] ?? {}, depth + 1);
      return out;
    }
    default:
      return 'a';
  }
}

/** A value nested `levels` deep: deeper than the service accepts (and than its transformers could recurse). */
export const deeplyNested = (levels: number): Raw => new Raw(`${'['.repeat(levels)}${']'.repeat(levels)}`);

/** Values of the wrong JSON type for a field of this schema. */
function wrongTypes(schema: Schema): Json[] {
  if (schema.oneOf) return [42, true, { a: 1 }];
  switch (typeOf(schema)) {
    case 'string':
      return [42, true, [], {}, ['a'], 1.5];
    case 'integer':
      return [1.5, '1', true, [], {}];
    case 'number':
      return ['1', true, [], {}, 'NaN'];
    case 'boolean':
      return ['true', 1, 0, [], {}];
    case 'array':
      return [{}, 'a', 1, true];
    case 'object':
      return ['a', 1, true, []];
    default:
      return [];
  }
}

/**
 * Mutations of one field. `required` adds removal and null; `strictType` says whether the service
 * itself checks this field's type (a pass-through field may take anything: those mutations are `maybe`);
 * `nullable`: null may be meant (OpenAI's `content: null`), so it is `maybe` too.
 */
export function fieldMutations(
  schema: Schema,
  required: boolean,
  strictType: boolean,
  nullable = false,
): FieldMutation[] {
  const typed: Outcome = strictType ? 'invalid' : 'maybe';
  const out: FieldMutation[] = wrongTypes(schema).map((value) => ({
    label: `wrong type ${JSON.stringify(value)}`,
    value,
    outcome: typed,
  }));
  if (required) {
    out.push({ label: 'left out', remove: true, outcome: 'missing' });
    out.push({ label: 'null', value: null, outcome: strictType && !nullable ? 'missing' : 'maybe' });
  }
  const type = typeOf(schema);
  if (type === 'string' && !schema.enum) {
    if ((schema.minLength ?? 0) > 0)
      out.push({ label: 'shorter than minLength', value: 'a'.repeat(schema.minLength! - 1), outcome: 'invalid' });
    if (schema.maxLength !== undefined)
      out.push({ label: 'longer than maxLength', value: 'b'.repeat(schema.maxLength + 1), outcome: 'invalid' });
    if (schema.pattern) out.push({ label: 'not matching its pattern', value: '!\u00e9 pattern', outcome: 'invalid' });
    out.push({ label: 'with a NUL', value: 'a\u0000b', outcome: 'invalid' });
    out.push({ label: 'with an unpaired surrogate', value: 'a\ud800b', outcome: 'invalid' });
    out.push({ label: 'a 1 MiB string', value: 'x'.repeat(MiB), outcome: 'too_large' });
  }
  if (schema.enum) {
    out.push({
      label: 'outside its enum',
      value: typeof schema.enum[0] === 'number' ? 12345 : 'not-a-member',
      outcome: 'invalid',
    });
  }
  if ((type === 'number' || type === 'integer') && !schema.enum) {
    const bounded = schema.minimum !== undefined || schema.maximum !== undefined;
    if (schema.minimum !== undefined) {
      const below =
        schema.exclusiveMinimum === true
          ? schema.minimum
          : type === 'integer'
            ? schema.minimum - 1
            : schema.minimum - 0.001;
      out.push({ label: 'below its minimum', value: below, outcome: 'invalid' });
      out.push({ label: '-1e308', value: -1e308, outcome: 'invalid' });
    }
    if (schema.maximum !== undefined) {
      out.push({
        label: 'above its maximum',
        value: type === 'integer' ? schema.maximum + 1 : schema.maximum + 0.001,
        outcome: 'invalid',
      });
      out.push({ label: '1e308', value: 1e308, outcome: 'invalid' });
    }
    if (type === 'integer') out.push({ label: 'not an integer', value: 2.5, outcome: 'invalid' });
    out.push({
      label: 'a number too big for a double (1e400)',
      value: new Raw('1e400'),
      outcome: bounded || type === 'integer' ? 'invalid' : 'maybe',
    });
  }
  if (type === 'array') {
    if ((schema.minItems ?? 0) > 0) out.push({ label: 'an empty array', value: [], outcome: 'invalid' });
    if (schema.uniqueItems && schema.items?.enum?.length)
      out.push({
        label: 'a repeated item',
        value: [schema.items.enum[0], schema.items.enum[0]] as Json[],
        outcome: 'invalid',
      });
    if (schema.items?.enum)
      out.push({ label: 'an item outside its enum', value: ['not-a-member'], outcome: 'invalid' });
    if (schema.maxItems !== undefined && schema.items) {
      out.push({
        label: 'more items than maxItems',
        value: Array.from({ length: schema.maxItems + 1 }, () => validValue(schema.items!)),
        outcome: 'invalid',
      });
    }
  }
  out.push({ label: 'nested 5,000 deep', value: deeplyNested(5000), outcome: 'invalid', reportedAt: 'top' });
  return out;
}

/** JSON text of a value with `Raw` parts spliced in. */
export function serialize(value: Json): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return `[${value.map(serialize).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${serialize(v)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}
