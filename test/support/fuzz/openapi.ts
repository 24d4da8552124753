import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../../src/common/paths';

/** The part of JSON Schema (OpenAPI 3.0 flavour) the walker reads. */
export interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean | number;
  exclusiveMaximum?: boolean | number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  additionalProperties?: boolean | Schema;
  oneOf?: Schema[];
  anyOf?: Schema[];
  allOf?: Schema[];
  format?: string;
  default?: unknown;
  example?: unknown;
  $ref?: string;
}

export interface Parameter {
  name: string;
  required: boolean;
  schema: Schema;
}

export type AuthKind = 'admin' | 'proxy' | 'none';

/** One operation of the document, with every `$ref` resolved. */
export interface Operation {
  /** `METHOD /path/{template}`: how fixtures and reports name it. */
  key: string;
  method: string;
  path: string;
  auth: AuthKind;
  /** The operation's OpenAPI tags (`minimax`: MiniMax's own routes, whose errors are HTTP 200 with a base_resp). */
  tags: string[];
  pathParams: Parameter[];
  queryParams: Parameter[];
  body: { contentType: string; schema: Schema } | null;
}

interface RawOperation {
  tags?: string[];
  security?: Array<Record<string, unknown>>;
  parameters?: Array<{ name: string; in: string; required?: boolean; schema?: Schema }>;
  requestBody?: { content?: Record<string, { schema?: Schema }> };
}

interface Document {
  security?: Array<Record<string, unknown>>;
  paths: Record<string, Record<string, RawOperation>>;
  components?: { schemas?: Record<string, Schema> };
}

const METHODS = new Set(['get', 'post', 'put', 'patch', 'delete']);

/** `$ref`s replaced by their targets and a one-element `allOf` (how Nest's plugin wraps a described `$ref`) unwrapped. */
function resolve(schema: Schema | undefined, doc: Document, seen: string[] = []): Schema {
  if (!schema) return {};
  if (schema.$ref) {
    const name = schema.$ref.replace('#/components/schemas/', '');
    if (seen.includes(name)) return {};
    return resolve(doc.components?.schemas?.[name], doc, [...seen, name]);
  }
  if (schema.allOf?.length === 1 && !schema.type && !schema.properties) {
    const { allOf, ...rest } = schema;
    return { ...resolve(allOf[0], doc, seen), ...rest };
  }
  const out: Schema = { ...schema };
  if (schema.properties) {
    out.properties = Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, resolve(v, doc, seen)]));
  }
  if (schema.items) out.items = resolve(schema.items, doc, seen);
  if (typeof schema.additionalProperties === 'object')
    out.additionalProperties = resolve(schema.additionalProperties, doc, seen);
  if (schema.oneOf) out.oneOf = schema.oneOf.map((s) => resolve(s, doc, seen));
  if (schema.anyOf) out.anyOf = schema.anyOf.map((s) => resolve(s, doc, seen));
  return out;
}

function authOf(op: RawOperation, doc: Document): AuthKind {
  if (op.tags?.includes('admin')) return 'admin';
  const security = op.security ?? doc.security ?? [];
  const schemes = security.flatMap((requirement) => Object.keys(requirement));
  if (schemes.includes('admin')) return 'admin';
  return schemes.length > 0 ? 'proxy' : 'none';
}

/** Every operation of the committed OpenAPI document (`openapi/openapi.json` unless told otherwise). */
export function loadOperations(file = join(projectRoot(), 'openapi/openapi.json')): Operation[] {
  const doc = JSON.parse(readFileSync(file, 'utf8')) as Document;
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      const params = (op.parameters ?? []).map((p) => ({
        in: p.in,
        name: p.name,
        required: p.required === true || p.in === 'path',
        schema: resolve(p.schema, doc),
      }));
      const content = op.requestBody?.content ?? {};
      const contentType =
        ['application/json', 'multipart/form-data'].find((type) => content[type]) ?? Object.keys(content)[0];
      operations.push({
        key: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        auth: authOf(op, doc),
        tags: op.tags ?? [],
        pathParams: params.filter((p) => p.in === 'path'),
        queryParams: params.filter((p) => p.in === 'query'),
        body: contentType ? { contentType, schema: resolve(content[contentType]?.schema, doc) } : null,
      });
    }
  }
  return operations;
}
