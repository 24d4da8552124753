#!/usr/bin/env node
// Writes docs/api.md, the HTTP API reference, from the committed openapi/openapi.json (`npm run docs`).
// `--check` writes nothing and exits 1 when docs/api.md is not what the document gives.
// `--openapi <file>` and `--out <file>` read and write other files (the tests use them).
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const OPENAPI_FILE = join(root, 'openapi/openapi.json');
export const API_DOCS_FILE = join(root, 'docs/api.md');

/** The WebSocket route, which OpenAPI cannot describe: the index links its hand-written page. */
const STREAM_PATH = '/v1/audio/speech/stream';
const METHODS = ['get', 'put', 'post', 'patch', 'delete', 'head', 'options'];

/** GitHub's heading anchor: lower case, punctuation other than `-` and `_` dropped, spaces to `-`. */
export function githubSlug(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Text for one table cell: one line, pipes escaped. */
const cell = (text) =>
  String(text ?? '')
    .replace(/\s*\n\s*/g, ' ')
    .replace(/\|/g, '\\|')
    .trim();

/** Paragraph text: the document's line breaks inside a paragraph become spaces, blank lines stay. */
const prose = (text) =>
  String(text ?? '')
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.replace(/\s*\n\s*/g, ' ').trim())
    .filter(Boolean)
    .join('\n\n');

const refName = (ref) => ref.slice(ref.lastIndexOf('/') + 1);
const schemaLink = (ref) => `[${refName(ref)}](#${githubSlug(refName(ref))})`;

/** A schema in a few words: a link for a named one, `array of …`, enums and bounds spelled out. */
export function typeOf(schema) {
  if (!schema) return '';
  if (schema.$ref) return schemaLink(schema.$ref);
  if (schema.allOf?.length === 1) return `${typeOf(schema.allOf[0])}${schema.nullable ? ' or null' : ''}`;
  for (const combiner of ['oneOf', 'anyOf']) {
    if (schema[combiner]) return schema[combiner].map(typeOf).join(' or ') + (schema.nullable ? ' or null' : '');
  }
  let text;
  if (schema.enum) text = schema.enum.map((value) => `\`${JSON.stringify(value)}\``).join(', ');
  else if (schema.type === 'array') text = `array of ${typeOf(schema.items) || 'any'}`;
  else if (schema.type === 'object' && schema.additionalProperties && typeof schema.additionalProperties === 'object') {
    text = `map of ${typeOf(schema.additionalProperties) || 'any'}`;
  } else text = schema.type ?? 'any';
  if (schema.format) text += ` (${schema.format})`;
  const bounds = [];
  if (schema.minimum !== undefined) bounds.push(`≥ ${schema.minimum}`);
  if (schema.exclusiveMinimum !== undefined) bounds.push(`> ${schema.exclusiveMinimum}`);
  if (schema.maximum !== undefined) bounds.push(`≤ ${schema.maximum}`);
  if (schema.minLength !== undefined) bounds.push(`length ≥ ${schema.minLength}`);
  if (schema.maxLength !== undefined) bounds.push(`length ≤ ${schema.maxLength}`);
  if (schema.minItems !== undefined) bounds.push(`items ≥ ${schema.minItems}`);
  if (schema.maxItems !== undefined) bounds.push(`items ≤ ${schema.maxItems}`);
  if (schema.pattern !== undefined) bounds.push(`pattern \`${schema.pattern}\``);
  if (bounds.length > 0) text += `, ${bounds.join(', ')}`;
  if (schema.default !== undefined) text += `, default \`${JSON.stringify(schema.default)}\``;
  if (schema.nullable) text += ' or null';
  return text;
}

function authOf(operation, spec) {
  const security = operation.security ?? spec.security ?? [];
  const schemes = security.flatMap((requirement) => Object.keys(requirement));
  return schemes.length === 0 ? 'none' : schemes.map((name) => `\`${name}\``).join(' or ');
}

function operationsOf(spec) {
  const operations = [];
  for (const [path, item] of Object.entries(spec.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation) operations.push({ path, method, operation, tag: operation.tags?.[0] ?? 'other' });
    }
  }
  return operations;
}

const headingOf = ({ method, path }) => `${method.toUpperCase()} ${path}`;

function firstSentence(text) {
  const flat = prose(text).split('\n\n')[0] ?? '';
  const end = flat.search(/\.(\s|$)/);
  return end < 0 ? flat : flat.slice(0, end + 1);
}

function renderOperation(entry, spec, lines) {
  const { operation } = entry;
  lines.push(`### ${headingOf(entry)}`, '');
  if (operation.summary) lines.push(prose(operation.summary), '');
  if (operation.description) lines.push(prose(operation.description), '');
  lines.push(`Auth: ${authOf(operation, spec)}. Operation id: \`${operation.operationId ?? '-'}\`.`, '');

  const parameters = operation.parameters ?? [];
  if (parameters.length > 0) {
    lines.push('| Parameter | In | Type | Required | Description |', '|---|---|---|---|---|');
    for (const p of parameters)
      lines.push(
        `| \`${p.name}\` | ${p.in} | ${cell(typeOf(p.schema))} | ${p.required ? 'yes' : 'no'} | ${cell(p.description)} |`,
      );
    lines.push('');
  }

  const body = operation.requestBody;
  if (body) {
    const contents = Object.entries(body.content ?? {}).map(([type, media]) =>
      `\`${type}\` ${typeOf(media.schema)}`.trim(),
    );
    lines.push(`Request body${body.required ? '' : ' (optional)'}: ${contents.join('; ')}.`, '');
  }

  lines.push('| Status | Meaning | Body | Headers |', '|---|---|---|---|');
  for (const [status, response] of Object.entries(operation.responses ?? {})) {
    const contents = Object.entries(response.content ?? {}).map(
      ([type, media]) => `\`${type}\`${media.schema ? ` ${typeOf(media.schema)}` : ''}`,
    );
    const headers = Object.keys(response.headers ?? {}).map((name) => `\`${name}\``);
    lines.push(
      `| ${status} | ${cell(response.description)} | ${cell(contents.join('; '))} | ${cell(headers.join(', '))} |`,
    );
  }
  lines.push('');
}

function renderSchema(name, schema, lines) {
  lines.push(`### ${name}`, '');
  if (schema.description) lines.push(prose(schema.description), '');
  const properties = Object.entries(schema.properties ?? {});
  if (properties.length === 0) {
    lines.push(`Type: ${typeOf({ ...schema, description: undefined })}.`, '');
    return;
  }
  const required = new Set(schema.required ?? []);
  lines.push('| Field | Type | Required | Description |', '|---|---|---|---|');
  for (const [field, property] of properties) {
    const example = property.example !== undefined ? ` Example: \`${JSON.stringify(property.example)}\`.` : '';
    lines.push(
      `| \`${field}\` | ${cell(typeOf(property))} | ${required.has(field) ? 'yes' : 'no'} | ${cell(`${property.description ?? ''}${example}`)} |`,
    );
  }
  lines.push('');
}

/** The whole of docs/api.md for one OpenAPI document. */
export function renderApiDocs(spec) {
  const lines = [
    '<!-- Generated from openapi/openapi.json by `npm run docs` (scripts/api-docs.mjs): do not edit by hand. -->',
    '',
    '# API reference',
    '',
    `${spec.info?.title ?? 'API'}, API version ${spec.info?.version ?? '-'} (OpenAPI ${spec.openapi}).`,
    '',
  ];
  if (spec.info?.description) lines.push(prose(spec.info.description), '');
  lines.push(
    'This page lists every HTTP operation of the [OpenAPI document](../openapi/openapi.json). The WebSocket speech',
    'stream is not an HTTP operation: its messages are in [websocket.md](websocket.md). Error codes, limits and',
    'headers are explained in [decisions.md](decisions.md).',
    '',
    '## Authentication',
    '',
    '| Scheme | Type | Format | Description |',
    '|---|---|---|---|',
  );
  for (const [name, scheme] of Object.entries(spec.components?.securitySchemes ?? {})) {
    lines.push(
      `| \`${name}\` | ${cell(`${scheme.type}${scheme.scheme ? ` ${scheme.scheme}` : ''}`)} | ${cell(scheme.bearerFormat)} | ${cell(scheme.description)} |`,
    );
  }
  lines.push('');

  const operations = operationsOf(spec);
  const tags = [...new Set(operations.map((entry) => entry.tag))];
  lines.push('## Operations', '', '| Operation | Auth | Summary |', '|---|---|---|');
  for (const entry of operations) {
    lines.push(
      `| [\`${headingOf(entry)}\`](#${githubSlug(headingOf(entry))}) | ${authOf(entry.operation, spec)} | ${cell(firstSentence(entry.operation.summary))} |`,
    );
  }
  lines.push(
    `| [\`GET ${STREAM_PATH}\` (WebSocket)](websocket.md) | \`proxy-key\` | Speech over a WebSocket: not in the OpenAPI document, described by hand. |`,
    '',
  );
  for (const tag of tags) {
    lines.push(`## Tag: ${tag}`, '');
    for (const entry of operations.filter((candidate) => candidate.tag === tag)) renderOperation(entry, spec, lines);
  }

  const headers = Object.entries(spec.components?.headers ?? {});
  if (headers.length > 0) {
    lines.push('## Response headers', '', '| Header | Type | Description |', '|---|---|---|');
    for (const [name, header] of headers)
      lines.push(`| \`${name}\` | ${cell(typeOf(header.schema))} | ${cell(header.description)} |`);
    lines.push('');
  }

  lines.push('## Schemas', '');
  for (const [name, schema] of Object.entries(spec.components?.schemas ?? {})) renderSchema(name, schema, lines);
  return `${lines.join('\n').replace(/\n+$/, '')}\n`;
}

function argument(name, fallback) {
  const at = process.argv.indexOf(name);
  return at >= 0 && process.argv[at + 1] ? resolve(process.argv[at + 1]) : fallback;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const source = argument('--openapi', OPENAPI_FILE);
  const target = argument('--out', API_DOCS_FILE);
  const markdown = renderApiDocs(JSON.parse(readFileSync(source, 'utf8')));
  if (process.argv.includes('--check')) {
    let current = null;
    try {
      current = readFileSync(target, 'utf8');
    } catch {
      // a missing file is stale too
    }
    if (current !== markdown) {
      process.stderr.write(
        `${relative(root, target) || target} is stale against ${relative(root, source) || source}: run \`npm run docs\`\n`,
      );
      process.exit(1);
    }
  } else {
    writeFileSync(target, markdown);
    process.stdout.write(`wrote ${relative(root, target)}\n`);
  }
}
