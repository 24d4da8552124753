import type { OpenAPIObject } from '@nestjs/swagger';
import { MESSAGES, Schema } from './asyncapi-messages';
import { ASYNC_TEXT_LIMIT } from './speech/speech-job';
import { MAX_MESSAGE_BYTES, SEND_HIGH_WATER_BYTES, STREAM_PATH } from './speech/stream/speech-stream.gateway';

/** MiniMax's own path of the same stream (decisions §10): the same messages, keys and limits. */
export const MINIMAX_STREAM_PATH = '/ws/v1/t2a_v2';
/** Where browsers get a single-use ticket for the upgrade (decisions §10). */
export const TICKETS_PATH = `${STREAM_PATH}/tickets`;

/** Fields of the synchronous speech body that the stream does not take (text comes in task_continue). */
const NOT_ON_THE_STREAM = new Set(['text', 'stream', 'stream_options', 'output_format']);
/** wav needs the length in its header, so the stream refuses it. */
const STREAM_FORMATS = ['mp3', 'pcm', 'flac', 'opus', 'pcmu_raw'];

/**
 * An OpenAPI 3.0 schema as JSON Schema draft 07 (AsyncAPI's default schema format): boolean
 * `exclusiveMinimum`/`exclusiveMaximum` become numbers and `nullable` a type union (`$ref`s keep their
 * `#/components/schemas/…` form, which is the same path in both documents).
 */
function toJsonSchema(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toJsonSchema);
  if (typeof value !== 'object' || value === null) return value;
  const schema: Schema = {};
  for (const [name, inner] of Object.entries(value)) schema[name] = toJsonSchema(inner);
  for (const [flag, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (schema[flag] === true) {
      schema[flag] = schema[bound];
      delete schema[bound];
    } else if (schema[flag] === false) delete schema[flag];
  }
  if (schema.nullable === true && typeof schema.type === 'string') schema.type = [schema.type, 'null'];
  delete schema.nullable;
  return schema;
}

/** A component schema of the OpenAPI document, found by its name with or without the `Dto` suffix. */
function openApiSchema(openapi: OpenAPIObject, name: string): Schema {
  const schemas = (openapi.components?.schemas ?? {}) as Record<string, Schema>;
  const found = schemas[name] ?? schemas[`${name}Dto`];
  if (!found)
    throw new Error(
      `the OpenAPI document has no schema ${name}: the AsyncAPI document takes the speech settings from it`,
    );
  return found;
}

/** The schemas that task_start shares with synchronous speech, plus every schema those refer to. */
function speechSchemas(openapi: OpenAPIObject): Record<string, Schema> {
  const schemas = (openapi.components?.schemas ?? {}) as Record<string, Schema>;
  const collected: Record<string, Schema> = {};
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (typeof value !== 'object' || value === null) return;
    const ref = (value as Schema).$ref;
    if (typeof ref === 'string') {
      const name = ref.slice(ref.lastIndexOf('/') + 1);
      if (!(name in collected) && schemas[name]) {
        collected[name] = toJsonSchema(schemas[name]) as Schema;
        visit(schemas[name]);
      }
    }
    Object.values(value).forEach(visit);
  };
  const request = openApiSchema(openapi, 'SpeechRequest');
  const properties = Object.fromEntries(
    Object.entries((request.properties ?? {}) as Record<string, unknown>).filter(
      ([name]) => !NOT_ON_THE_STREAM.has(name),
    ),
  );
  visit(properties);
  // the stream's audio_setting: the same fields, without wav
  const audio = Object.entries(collected).find(([name]) => /^AudioSetting(Dto)?$/.test(name));
  if (audio) {
    const format = (audio[1].properties as Record<string, Schema> | undefined)?.format;
    if (format)
      collected[audio[0]] = {
        ...audio[1],
        properties: { ...(audio[1].properties as Schema), format: { ...format, enum: STREAM_FORMATS } },
      };
  }
  const required = ((request.required ?? []) as string[]).filter((name) => !NOT_ON_THE_STREAM.has(name));
  collected.TaskStart = {
    type: 'object',
    additionalProperties: false,
    required: ['event', ...required],
    properties: { event: { const: 'task_start' }, ...(toJsonSchema(properties) as Schema) },
  };
  return collected;
}

const UPGRADE_DESCRIPTION = [
  "MiniMax's event protocol for streaming text-to-speech: the client sends text as it has it, the server sends audio as it is made. ",
  'Every message is one JSON text frame; binary frames are refused.\n\n',
  '**Authentication happens on the upgrade**, with one of: `Authorization: Bearer sk-svc-…`; `?ticket=` with a single-use ticket from ',
  `\`POST ${TICKETS_PATH}\` (bearer key; answers \`{"ticket","expires_at"}\`, valid 60 s) — for browsers, which cannot set headers on a WebSocket; `,
  'or `?api_key=sk-svc-…` (kept for compatibility, never logged or echoed). The key is checked on the upgrade, and again on ',
  'every client message and before every audio message: a key deleted while its stream is open gets `task_failed` ',
  '`key_revoked` and close 1008.\n\n',
  'A refused upgrade is a plain HTTP answer in the error shape (`{"error":{"message","type","param","code"}}`) with `x-svc-request-id`, and no ',
  'socket: 401 `missing_api_key`/`invalid_api_key`, 429 `too_many_streams` (`SVC_WS_MAX_STREAMS_PER_KEY` per replica, by default the ',
  "key's share of the audio worker pool) or `rate_limited`, 503 `database_unavailable`; a refused upgrade does not spend its ticket. ",
  'The 101 answer carries `x-svc-request-id`.\n\n',
  '**Limits**: one message ',
  `${MAX_MESSAGE_BYTES / 1024} KiB (close 1009); text received and not yet spoken ${ASYNC_TEXT_LIMIT.toLocaleString('en')} characters (\`text_too_long\`); `,
  `unread audio ${SEND_HIGH_WATER_BYTES / 1024 / 1024} MiB (synthesis pauses; still full after \`SVC_WS_STALL_MS\` the connection is dropped); `,
  'no message either way for `SVC_WS_IDLE_MS` (120 s): close 1000 `idle timeout`. SIGTERM: queued text is spoken first, then close 1001.\n\n',
  '**Close codes**: 1000 `task finished` or `idle timeout`; 1001 `server shutting down`; 1008 a client mistake (after `task_failed`); ',
  '1009 message too big; 1011 speaking failed (after `task_failed`: e.g. `all_providers_failed`, `upstream_stream_failed` naming the ',
  'provider that broke after its audio began, or `busy` when the local audio worker pool is full).',
].join('');

const channelBindings = {
  ws: {
    method: 'GET',
    headers: {
      type: 'object',
      properties: {
        Authorization: {
          type: 'string',
          pattern: '^Bearer sk-svc-',
          description: 'The proxy key (clients that can set headers).',
        },
      },
    },
    query: {
      type: 'object',
      properties: {
        ticket: {
          type: 'string',
          description: `A single-use ticket from \`POST ${TICKETS_PATH}\`, valid 60 s (browsers).`,
        },
        api_key: { type: 'string', description: 'The proxy key (compatibility; never logged or echoed).' },
      },
    },
    bindingVersion: '0.1.0',
  },
};

/** The AsyncAPI 3 document of the speech stream, built from the same code as the OpenAPI document. */
export function buildAsyncApiDocument(openapi: OpenAPIObject): Record<string, unknown> {
  const messageRef = (name: string) => ({ $ref: `#/components/messages/${name}` });
  const channels: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  for (const [channel, address, title] of [
    ['speechStream', STREAM_PATH, "The gateway's path."],
    [
      'minimaxStream',
      MINIMAX_STREAM_PATH,
      "MiniMax's own path: the same protocol, for MiniMax's clients (change only the base URL and key).",
    ],
  ] as const) {
    channels[channel] = {
      address,
      title: address,
      description: `${title} Messages in order: server \`connected_success\`; client \`task_start\` → \`task_started\`; client \`task_continue\` (repeated) → \`task_continued\` (one or more each); client \`task_finish\` → the remaining \`task_continued\` (the last with \`is_final\`), \`task_finished\`, close 1000. \`task_failed\` on any failure, then close 1008 or 1011.`,
      messages: Object.fromEntries(Object.keys(MESSAGES).map((name) => [name, messageRef(name)])),
      bindings: channelBindings,
    };
    const channelRef = { $ref: `#/channels/${channel}` };
    const message = (name: string) => ({ $ref: `#/channels/${channel}/messages/${name}` });
    const prefix = channel === 'speechStream' ? '' : 'minimax_';
    Object.assign(operations, {
      [`${prefix}sendConnected`]: {
        action: 'send',
        channel: channelRef,
        summary: 'The server greets a new stream.',
        messages: [message('connected_success')],
      },
      [`${prefix}receiveTaskStart`]: {
        action: 'receive',
        channel: channelRef,
        summary: 'The client starts the task.',
        messages: [message('task_start')],
        reply: { channel: channelRef, messages: [message('task_started'), message('task_failed')] },
      },
      [`${prefix}receiveTaskContinue`]: {
        action: 'receive',
        channel: channelRef,
        summary: 'The client sends text.',
        messages: [message('task_continue')],
        reply: { channel: channelRef, messages: [message('task_continued'), message('task_failed')] },
      },
      [`${prefix}receiveTaskFinish`]: {
        action: 'receive',
        channel: channelRef,
        summary: 'The client has no more text.',
        messages: [message('task_finish')],
        reply: {
          channel: channelRef,
          messages: [message('task_continued'), message('task_finished'), message('task_failed')],
        },
      },
      [`${prefix}sendAudio`]: {
        action: 'send',
        channel: channelRef,
        summary: 'The server sends audio as it is made.',
        messages: [message('task_continued')],
      },
      [`${prefix}sendTaskFailed`]: {
        action: 'send',
        channel: channelRef,
        summary: 'The server ends a failed task.',
        messages: [message('task_failed')],
      },
    });
  }
  const description = (openapi.info.description ?? '').split('. ')[0];
  return {
    asyncapi: '3.0.0',
    info: {
      title: `${openapi.info.title}: speech stream`,
      version: openapi.info.version,
      description: `${description}. This document describes the WebSocket speech stream; the HTTP API is in /openapi.json.\n\n${UPGRADE_DESCRIPTION}`,
    },
    defaultContentType: 'application/json',
    servers: {
      gateway: {
        host: 'localhost:3000',
        protocol: 'ws',
        description: 'The HTTP port of the gateway (`wss` behind TLS).',
        security: [
          { $ref: '#/components/securitySchemes/bearer' },
          { $ref: '#/components/securitySchemes/ticket' },
          { $ref: '#/components/securitySchemes/apiKey' },
        ],
      },
    },
    channels,
    operations,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'sk-svc-…',
          description: "The proxy key in the upgrade's `Authorization` header.",
        },
        ticket: {
          type: 'httpApiKey',
          name: 'ticket',
          in: 'query',
          description: `A single-use ticket, valid 60 s: \`POST ${TICKETS_PATH}\` with the bearer key answers \`{"ticket","expires_at"}\`. For browsers.`,
        },
        apiKey: {
          type: 'httpApiKey',
          name: 'api_key',
          in: 'query',
          description: 'The proxy key in the query (compatibility; redacted from every log line).',
        },
      },
      messages: Object.fromEntries(
        Object.entries(MESSAGES).map(([name, m]) => [
          name,
          {
            name,
            title: `${name} (${m.direction === 'client' ? 'client → server' : 'server → client'})`,
            summary: m.summary,
            description: m.description,
            contentType: 'application/json',
            payload: m.payload,
            examples: m.examples.map((payload) => ({ payload })),
          },
        ]),
      ),
      schemas: speechSchemas(openapi),
    },
  };
}
