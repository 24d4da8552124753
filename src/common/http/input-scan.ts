import { DomainError } from '../errors/domain-error';

/** Deeper than any request of this API; the transformers recurse, so a body nested thousands deep would overflow the stack. */
export const MAX_INPUT_DEPTH = 32;

/** Names of Object.prototype (`__proto__`, `constructor`, `toString`, …): the whitelist lets them through, so they are refused here. */
const PROTOTYPE_KEYS = new Set([...Object.getOwnPropertyNames(Object.prototype), 'prototype']);

const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Text PostgreSQL refuses to store (a NUL, or an unpaired surrogate in JSON), or null. */
export function textProblem(text: string): string | null {
  if (text.includes('\u0000')) return 'must not contain NUL characters';
  if (UNPAIRED_SURROGATE.test(text)) return 'must be valid Unicode (it holds an unpaired surrogate)';
  return null;
}

const childPath = (parent: string, key: string, inArray: boolean): string =>
  inArray ? `${parent}[${key}]` : parent ? `${parent}.${key}` : key;

interface Pending {
  value: unknown;
  path: string;
  /** The top-level field the value sits in: what a depth problem names. */
  field: string;
  depth: number;
}

/**
 * What no DTO rule catches in a request's params, query or body: text the database cannot store,
 * nesting deeper than MAX_INPUT_DEPTH and (`refusePrototypeKeys`, for validated DTOs) `__proto__`-like
 * keys. Iterative, so hostile nesting costs no stack. The error names the field at fault.
 */
export function inputProblem(value: unknown, root: string, refusePrototypeKeys: boolean): DomainError | null {
  const pending: Pending[] = [{ value, path: root, field: root, depth: 0 }];
  for (let item = pending.pop(); item; item = pending.pop()) {
    const { path, field, depth } = item;
    if (typeof item.value === 'string') {
      const problem = textProblem(item.value);
      if (problem) return new DomainError('invalid_value', `'${path || 'body'}' ${problem}.`, { param: path || null });
      continue;
    }
    if (typeof item.value !== 'object' || item.value === null || Buffer.isBuffer(item.value)) continue;
    if (depth >= MAX_INPUT_DEPTH) {
      return new DomainError('invalid_value', `'${field || 'body'}' is nested deeper than ${MAX_INPUT_DEPTH} levels.`, {
        param: field || null,
      });
    }
    const inArray = Array.isArray(item.value);
    const container = item.value as Record<string, unknown>;
    for (const key of Object.keys(container)) {
      const at = childPath(path, key, inArray);
      if (!inArray) {
        const problem = textProblem(key);
        if (problem)
          return new DomainError('invalid_value', `A key of '${path || 'body'}' ${problem}.`, { param: path || null });
        if (refusePrototypeKeys && PROTOTYPE_KEYS.has(key))
          return new DomainError('unknown_field', `Unknown field '${at}'.`, { param: at });
      }
      pending.push({ value: container[key], path: at, field: field || at, depth: depth + 1 });
    }
  }
  return null;
}

/** Class-like design types: a property typed with one of these holds a single object, never an array. */
const NOT_OBJECT_TYPES = new Set<unknown>([Array, Object, String, Number, Boolean, Date, Buffer, Promise]);

/**
 * `@ValidateNested()` also passes an array (each item validated, an empty one not at all), so
 * `"voice_setting": []` would reach the service as a setting. Finds an array in a property whose
 * declared type is a class, in a validated DTO and the DTOs nested in it.
 */
export function arrayForObject(dto: unknown, root = ''): DomainError | null {
  const pending: Array<{ value: unknown; path: string }> = [{ value: dto, path: root }];
  for (let item = pending.pop(); item; item = pending.pop()) {
    const { value, path } = item;
    if (Array.isArray(value)) {
      value.forEach((entry, i) => pending.push({ value: entry, path: `${path}[${i}]` }));
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    const prototype: object | null = Object.getPrototypeOf(value) as object | null;
    if (!prototype || prototype === Object.prototype) continue;
    for (const [key, child] of Object.entries(value)) {
      const at = path ? `${path}.${key}` : key;
      const declared: unknown = Reflect.getMetadata('design:type', prototype, key);
      if (Array.isArray(child) && typeof declared === 'function' && !NOT_OBJECT_TYPES.has(declared)) {
        return new DomainError('invalid_value', `Invalid value for '${at}': ${key} must be an object, not an array.`, {
          param: at,
        });
      }
      pending.push({ value: child, path: at });
    }
  }
  return null;
}
