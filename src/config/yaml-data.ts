import { Transform } from 'class-transformer';
import { isAlias, isMap, isScalar, isSeq, parseDocument, Scalar } from 'yaml';
import type { ScalarTag } from 'yaml';

/** Beside a mapping or sequence read from YAML: the source text of each of its plain numbers, by key or index. */
const SOURCE_TEXT = Symbol('yaml source text');

type WithTexts = { [SOURCE_TEXT]?: Record<string, string> };

export class YamlDataError extends Error {}

/** `${NAME}`: replaced by the environment's value (empty when unset). */
const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const TOKEN = /__svc_env_(\d+)__/g;

/**
 * YAML text as plain data, `${NAME}` interpolated inside each scalar: a value never becomes YAML syntax (a `#` or
 * `: ` in a secret stays in it), and `${NAME}` may stand anywhere a scalar can, in flow mappings too. An unquoted
 * scalar is then read as YAML reads it (`${TIMEOUT_MS}` may give a number), and every number keeps its source
 * text beside it for the string fields (`YamlText`).
 */
export function yamlData(text: string, env: NodeJS.ProcessEnv): unknown {
  // each reference becomes a token that is a plain scalar's text in any context, put back once parsed
  const names: string[] = [];
  const doc = parseDocument(text.replace(REFERENCE, (_, name: string) => `__svc_env_${names.push(name) - 1}__`));
  if (doc.errors.length > 0) throw new YamlDataError(doc.errors[0].message);
  const restore = (value: string): string => value.replace(TOKEN, (_, i: string) => env[names[Number(i)]] ?? '');
  // the core schema's own rules for an unquoted scalar (null, booleans, integers, floats), tried in its order
  const plainTags = doc.schema.tags.filter(
    (tag): tag is ScalarTag & { test: RegExp } => 'test' in tag && tag.test instanceof RegExp && tag.default === true,
  );
  const resolvePlain = (value: string): unknown => {
    const tag = plainTags.find((t) => t.test.test(value));
    const resolved: unknown = tag ? tag.resolve(value, () => undefined, {}) : value;
    return isScalar(resolved) ? resolved.value : resolved; // the null rule answers a Scalar node
  };
  const scalar = (node: Scalar): { value: unknown; text?: string } => {
    if (node.type === Scalar.PLAIN && typeof node.source === 'string') {
      const source = restore(node.source);
      const value = source === node.source ? node.value : resolvePlain(source);
      return typeof value === 'number' ? { value, text: source } : { value };
    }
    return { value: typeof node.value === 'string' ? restore(node.value) : node.value };
  };
  const toData = (node: unknown): { value: unknown; text?: string } => {
    if (isAlias(node)) return toData(node.resolve(doc));
    if (isScalar(node)) return scalar(node);
    if (isMap(node) || isSeq(node)) {
      const out: Record<string, unknown> | unknown[] = isSeq(node) ? [] : {};
      const texts: Record<string, string> = {};
      node.items.forEach((item: unknown, i: number) => {
        const pair = isMap(node) ? (item as { key: unknown; value: unknown }) : { key: null, value: item };
        const key = isMap(node) ? String(toData(pair.key).value) : String(i);
        const { value, text } = toData(pair.value);
        (out as Record<string, unknown>)[key] = value;
        if (text !== undefined) texts[key] = text;
      });
      Object.defineProperty(out, SOURCE_TEXT, { value: texts, enumerable: false });
      return { value: out };
    }
    return { value: node ?? null };
  };
  return toData(doc.contents).value;
}

const textOf = (container: unknown, key: string, value: unknown): unknown =>
  typeof value === 'number' ? ((container as WithTexts | null)?.[SOURCE_TEXT]?.[key] ?? value) : value;

/**
 * A string field of the YAML (an id, a name, a secret): a number written or interpolated there is taken as the
 * text it was (`group_id: 1234567890123456789` stays those 19 digits), never as the JS number that rounded it. So
 * too each element of a list and each value of a mapping. Data not read by `yamlData` (a JSON body) passes as it is.
 */
export function YamlText(): PropertyDecorator {
  return Transform(({ value, obj, key }: { value: unknown; obj: unknown; key: string }) => {
    const original = (obj as Record<string, unknown>)[key];
    if (Array.isArray(value) && Array.isArray(original)) return value.map((v, i) => textOf(original, String(i), v));
    if (value && typeof value === 'object' && original && typeof original === 'object')
      return Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, textOf(original, k, v)]),
      );
    return textOf(obj, key, value);
  });
}
