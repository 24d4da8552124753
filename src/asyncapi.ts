import type { OpenAPIObject } from '@nestjs/swagger';
import { ASYNC_TEXT_LIMIT, SYNC_TEXT_LIMIT } from './speech/speech-job';
import { MAX_MESSAGE_BYTES, SEND_HIGH_WATER_BYTES, STREAM_PATH } from './speech/stream/speech-stream.gateway';
import { PIECE_CHARS } from './speech/stream/text-pieces';

/** MiniMax's own path of the same stream (decisions §10): the same messages, keys and limits. */
export const MINIMAX_STREAM_PATH = '/ws/v1/t2a_v2';
/** Where browsers get a single-use ticket for the upgrade (decisions §10). */
export const TICKETS_PATH = `${STREAM_PATH}/tickets`;

type Schema = Record<string, unknown>;
/** Fields of the synchronous speech body that the stream does not take (text comes in task_continue). */
const NOT_ON_THE_STREAM = new Set(['text', 'stream', 'stream_options', 'output_format']);
/** wav needs the length in its header, so the stream refuses it. */
const STREAM_FORMATS = ['mp3', 'pcm', 'flac'];

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

const eventOf = (name: string, extra: Schema, required: string[] = []): Schema => ({
  type: 'object',
  required: ['event', ...required],
  properties: { event: { const: name }, ...extra },
});

const SESSION_ID = {
  type: 'string',
  pattern: '^sess_',
  description: "The stream's id, the same in every server message.",
};
const PROVIDER = { type: 'string', description: 'The provider of the step that serves (that served the first audio).' };
const FALLBACK_LEVEL = { type: 'integer', minimum: 0, description: "Depth in the key's chain: 0 for the entry step." };

const MESSAGES: Record<
  string,
  { direction: 'client' | 'server'; summary: string; description: string; payload: Schema; examples: Schema[] }
> = {
  connected_success: {
    direction: 'server',
    summary: 'The socket is open',
    description: 'Sent as soon as the upgrade succeeded.',
    payload: eventOf('connected_success', { session_id: SESSION_ID }, ['session_id']),
    examples: [{ event: 'connected_success', session_id: 'sess_4H2kQm7ZpX0aVbN9cT3dRw1e' }],
  },
  task_start: {
    direction: 'client',
    summary: 'Start the task: model, voice and audio settings',
    description:
      "Once per connection. The model picks the entry step of the key's chain; the model and the voice are checked before `task_started`, so a bad " +
      'setting fails before any text is spoken. `task_continue` and `task_finish` may follow at once: they wait for these checks. Unknown fields are refused.',
    payload: { $ref: '#/components/schemas/TaskStart' },
    examples: [
      {
        event: 'task_start',
        model: 'speech-02-hd',
        voice_setting: { voice_id: 'en-us', speed: 1 },
        audio_setting: { format: 'mp3', sample_rate: 32000 },
      },
    ],
  },
  task_started: {
    direction: 'server',
    summary: 'The task is accepted',
    description: 'Names the step that would serve now: the first step of the chain whose circuit is not open.',
    payload: eventOf('task_started', { session_id: SESSION_ID, provider: PROVIDER, fallback_level: FALLBACK_LEVEL }, [
      'session_id',
      'provider',
      'fallback_level',
    ]),
    examples: [
      { event: 'task_started', session_id: 'sess_4H2kQm7ZpX0aVbN9cT3dRw1e', provider: 'espeak', fallback_level: 0 },
    ],
  },
  task_continue: {
    direction: 'client',
    summary: 'Text to speak',
    description:
      `As often as needed. Each message is spoken as it arrives and answered with its own audio; a long one is cut at sentence ends into pieces ` +
      `of at most ${PIECE_CHARS.toLocaleString('en')} characters. Send whole sentences or clauses for natural prosody.`,
    payload: eventOf(
      'task_continue',
      {
        text: {
          type: 'string',
          minLength: 1,
          maxLength: SYNC_TEXT_LIMIT,
          description: `1 to ${SYNC_TEXT_LIMIT.toLocaleString('en')} characters.`,
        },
      },
      ['text'],
    ),
    examples: [{ event: 'task_continue', text: 'Hello from the gateway. ' }],
  },
  task_continued: {
    direction: 'server',
    summary: 'Audio',
    description:
      "One or more per `task_continue`. `data.audio` is hex-encoded bytes of one continuous stream in the requested format (for mp3 the provider's " +
      'own frames; for pcm and flac one encoder for the whole task): concatenate the decoded chunks to get the file. `is_final` is true on the ' +
      'last audio message of the task. There is no failover after the first audio.',
    payload: eventOf(
      'task_continued',
      {
        data: {
          type: 'object',
          required: ['audio'],
          properties: {
            audio: { type: 'string', pattern: '^([0-9a-f]{2})+$', description: 'Hex-encoded audio bytes.' },
          },
        },
        is_final: { type: 'boolean' },
        provider: PROVIDER,
        fallback_level: FALLBACK_LEVEL,
      },
      ['data', 'is_final', 'provider', 'fallback_level'],
    ),
    examples: [
      { event: 'task_continued', data: { audio: 'fffb90c4…' }, is_final: false, provider: 'espeak', fallback_level: 0 },
    ],
  },
  task_finish: {
    direction: 'client',
    summary: 'No more text',
    description: 'The remaining audio follows, then `task_finished` and close 1000.',
    payload: eventOf('task_finish', {}),
    examples: [{ event: 'task_finish' }],
  },
  task_finished: {
    direction: 'server',
    summary: 'All audio was sent',
    description: 'Then the server closes with 1000 `task finished`.',
    payload: eventOf('task_finished', { session_id: SESSION_ID }, ['session_id']),
    examples: [{ event: 'task_finished', session_id: 'sess_4H2kQm7ZpX0aVbN9cT3dRw1e' }],
  },
  task_failed: {
    direction: 'server',
    summary: 'The task failed',
    description:
      'Then close 1008 for a client mistake (invalid JSON, a binary frame, an unknown event, a message out of order, invalid settings, text over ' +
      'its limit, a model or voice the chain cannot serve) or 1011 when speaking failed (`all_providers_failed`, `no_provider_available`, ' +
      '`upstream_rejected`, or the serving provider broke after audio began).',
    payload: eventOf(
      'task_failed',
      {
        session_id: SESSION_ID,
        error: {
          type: 'object',
          required: ['code', 'message'],
          properties: {
            code: {
              type: 'string',
              examples: ['invalid_json', 'voice_not_found', 'text_too_long', 'all_providers_failed'],
            },
            message: { type: 'string' },
          },
        },
      },
      ['session_id', 'error'],
    ),
    examples: [
      {
        event: 'task_failed',
        session_id: 'sess_4H2kQm7ZpX0aVbN9cT3dRw1e',
        error: { code: 'voice_not_found', message: "The voice 'nobody' is not available on the chain's entry step." },
      },
    ],
  },
};

const UPGRADE_DESCRIPTION = [
  "MiniMax's event protocol for streaming text-to-speech: the client sends text as it has it, the server sends audio as it is made. ",
  'Every message is one JSON text frame; binary frames are refused.\n\n',
  '**Authentication happens on the upgrade**, with one of: `Authorization: Bearer sk-svc-…`; `?ticket=` with a single-use ticket from ',
  `\`POST ${TICKETS_PATH}\` (bearer key; answers \`{"ticket","expires_at"}\`, valid 60 s) — for browsers, which cannot set headers on a WebSocket; `,
  'or `?api_key=sk-svc-…` (kept for compatibility, never logged or echoed). The key is checked once, on the upgrade.\n\n',
  'A refused upgrade is a plain HTTP answer in the error shape (`{"error":{"message","type","param","code"}}`) with `x-svc-request-id`, and no ',
  'socket: 401 `missing_api_key`/`invalid_api_key`, 429 `too_many_streams` (`SVC_WS_MAX_STREAMS_PER_KEY` per replica) or `rate_limited`, ',
  '503 `database_unavailable`. The 101 answer carries `x-svc-request-id`.\n\n',
  '**Limits**: one message ',
  `${MAX_MESSAGE_BYTES / 1024} KiB (close 1009); text received and not yet spoken ${ASYNC_TEXT_LIMIT.toLocaleString('en')} characters (\`text_too_long\`); `,
  `unread audio ${SEND_HIGH_WATER_BYTES / 1024 / 1024} MiB (synthesis pauses; still full after \`SVC_WS_STALL_MS\` the connection is dropped); `,
  'no message either way for `SVC_WS_IDLE_MS` (120 s): close 1000 `idle timeout`. SIGTERM: queued text is spoken first, then close 1001.\n\n',
  '**Close codes**: 1000 `task finished` or `idle timeout`; 1001 `server shutting down`; 1008 a client mistake (after `task_failed`); ',
  '1009 message too big; 1011 speaking failed (after `task_failed`).',
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
