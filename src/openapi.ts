import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { ERROR_CODES, ErrorCode } from './common/errors/error-codes';
import { dialectFor } from './common/errors/error-dialects';
import { isProxiedPath } from './common/http/proxied-routes';
import { CLIENT_FAULT_STATUSES } from './failover/chain';
import { withRequestExamples } from './openapi-examples';

type OperationObject = NonNullable<OpenAPIObject['paths'][string]['get']>;
type ResponseObject = Extract<OperationObject['responses'][string], { description: string }>;
type HeaderObject = { description: string; schema: { type: string } };

const SSE_DESCRIPTION =
  'Server-sent events: `data: {chat.completion.chunk with "provider"}` lines, then `data: [DONE]`. An upstream fault after the first ' +
  'byte is continued on a later step of the chain when one can (its `continuation` setting): the chunk where the continuation ' +
  'starts carries `svc_continuation: {from, to, mode: "prefill"|"restart", offset}` (offset: characters already delivered) and the ' +
  'chunks from there name the new `provider` and `model`; the client reads one whole answer. When no step can continue it, the ' +
  'stream ends with `data: {"error":{…,"code":"upstream_stream_failed"}}` and no `[DONE]`.';
const ERROR_SCHEMA = { $ref: '#/components/schemas/ErrorResponse' };

/**
 * Swagger UI's groups, in the order a newcomer reads them (the document's `tags`, which Swagger UI follows): what
 * the service is for first, the MiniMax- and operator-facing surfaces last.
 */
export const OPENAPI_TAGS: ReadonlyArray<readonly [name: string, description: string]> = [
  ['chat', "Chat completions in OpenAI's shape, through the key's failover chain (streaming or not)."],
  [
    'speech',
    'Text to speech (`speech-02-hd`): synchronous audio, async tasks for long text, tickets for the WebSocket stream.',
  ],
  ['voices', "The voices a key can speak with: built-in voices of its chain's providers, and custom voices it made."],
  ['voice consents', "Consent recordings: required before a custom voice is cloned from someone's voice."],
  ['models', "The models the key's chain serves, as OpenAI lists them."],
  ['providers', "Health of the providers in the key's chain: circuit state, failures, cooldown."],
  ['webhooks', 'Signed webhooks: failover and provider_recovered events, deliveries and tests.'],
  ['usage', "The key's usage records: who served each request, attempts, tokens and characters."],
  [
    'minimax',
    "MiniMax-native routes (T2A v2, async, files, voices): MiniMax's clients work by changing only the base URL.",
  ],
  ['admin', 'Operators: proxy keys and their chains (the admin token, SVC_ADMIN_TOKEN).'],
  ['operations', 'Probes for process managers and load balancers, and Prometheus metrics.'],
];

/** A realistic error body per code, shown as the examples of each error status (type and status from the code table). */
const ERROR_SAMPLES: Partial<Record<ErrorCode, { message: string; param?: string }>> = {
  invalid_json: { message: 'The body is not valid JSON: Unexpected end of JSON input.' },
  missing_field: { message: "'model' is required.", param: 'model' },
  invalid_value: { message: "'voice_setting.speed' must not be greater than 2.", param: 'voice_setting.speed' },
  model_not_supported: {
    message:
      "The model 'gpt-9' is not served by any chat step of this key's chain. Its chat models: echo-1. GET /v1/models lists them.",
    param: 'model',
  },
  voice_not_found: {
    message:
      "The voice 'nobody' is not a voice of espeak and its chain step has no voice_map entry for it; GET /v1/audio/voices lists the voices this key can use.",
    param: 'voice_setting.voice_id',
  },
  missing_api_key: { message: 'Missing API key: send the header `Authorization: Bearer <API_KEY>`.' },
  invalid_api_key: { message: 'Incorrect API key provided.' },
  admin_token_required: { message: 'This route needs the admin token, not a proxy key.' },
  resource_not_found: { message: "No voice consent found with id 'vc_0000000000000000000000'.", param: 'consent_id' },
  task_not_completed: {
    message: "The task 'task_0000000000000000000000' is still processing; download it once its status is completed.",
  },
  consent_in_use: { message: 'The consent is used by a custom voice; delete the voice first.' },
  task_expired: { message: "The audio of task 'task_0000000000000000000000' has expired." },
  text_too_long: { message: "'text' has 10001 characters; the limit is 10000.", param: 'text' },
  audio_too_long: { message: 'The audio of this request would exceed 1800 s.', param: 'text' },
  file_too_large: { message: 'The uploaded file is larger than the 10 MiB limit.', param: 'recording' },
  body_too_large: { message: 'The JSON body is larger than 1 MiB.' },
  unsupported_media_type: { message: 'Send the request body as application/json (uploads: multipart/form-data).' },
  rate_limited: { message: 'Rate limit reached for this key; retry in 12 s.' },
  quota_exceeded: {
    message:
      'This key already holds 1000 voice consents (the quota SVC_QUOTA_CONSENTS); delete one it no longer needs first.',
  },
  insufficient_storage: {
    message:
      "The gateway's storage is full (the database holds 10737418240 bytes, its budget SVC_STORAGE_BUDGET_BYTES is 10737418240): nothing new can be stored until an operator frees space.",
  },
  all_providers_failed: { message: 'Every provider failed: openai (HTTP 503), anthropic (timeout).' },
  no_provider_available: {
    message: 'Every provider of this request is unavailable (open circuit or usage cap); retry later.',
  },
  database_unavailable: { message: 'The database is unavailable; retry shortly.' },
};

/** The examples of one error status: every sampled code with that status, named by code. */
function errorExamples(status: number): Record<string, { summary: string; value: unknown }> {
  const entries = (Object.entries(ERROR_SAMPLES) as Array<[ErrorCode, { message: string; param?: string }]>)
    .filter(([code]) => ERROR_CODES[code].status === status)
    .map(([code, sample]) => [
      code,
      {
        summary: code,
        value: { error: { message: sample.message, type: ERROR_CODES[code].type, param: sample.param ?? null, code } },
      },
    ]);
  return Object.fromEntries(entries) as Record<string, { summary: string; value: unknown }>;
}

/** Schema names as a client sees them (`ChatCompletion`, not the class name `ChatCompletionDto`), $refs rewritten. */
function withoutDtoSuffix(document: OpenAPIObject): OpenAPIObject {
  const schemas = document.components?.schemas ?? {};
  const renames = new Map<string, string>();
  for (const name of Object.keys(schemas)) {
    const short = name.replace(/Dto$/, '');
    if (short !== name && !(short in schemas)) renames.set(name, short);
  }
  const text = JSON.stringify(document).replace(
    /"#\/components\/schemas\/([A-Za-z0-9_]+)"/g,
    (ref: string, name: string) => (renames.has(name) ? `"#/components/schemas/${renames.get(name)}"` : ref),
  );
  const renamed = JSON.parse(text) as OpenAPIObject;
  renamed.components = {
    ...renamed.components,
    schemas: Object.fromEntries(
      Object.entries(renamed.components?.schemas ?? {}).map(([name, schema]) => [renames.get(name) ?? name, schema]),
    ),
  };
  return renamed;
}
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

const header = (description: string, type: 'string' | 'boolean' | 'integer'): HeaderObject => ({
  description,
  schema: { type },
});
const REQUEST_ID = header('Correlates the request with usage records, logs and webhook events (`req_…`).', 'string');
const SDK_REQUEST_ID = header(
  'The same id as `x-svc-request-id`, under the name the OpenAI SDKs read (`_request_id`, `APIError.requestID`).',
  'string',
);
/** Interface §6.3 and decisions §4: on every answer of a proxied route, errors included. */
const FAILOVER_HEADERS: Record<string, HeaderObject> = {
  'x-svc-provider-used': header('Provider that served the request (`none` when no step served it).', 'string'),
  'x-svc-is-fallback': header(
    '`true` when a fallback step served it (or the chain went past its entry step).',
    'boolean',
  ),
  'x-svc-fallback-level': header('Depth in the chain: 0 for the entry step, 1 or more for a fallback.', 'integer'),
  'x-svc-fallback-alert': header(
    'Only when a failover happened: JSON `{"message","exhausted_provider","active_provider","fallback_level"}`.',
    'string',
  ),
};
/** Decisions §3: on a proxied route's answer that relays an upstream's refusal of the request. */
const UPSTREAM_STATUS = header(
  "The upstream's HTTP status, on an error that relays an upstream's refusal of the request (its own `type`, `code`, `param` and `message` when it gave a `code`, else `upstream_rejected`).",
  'integer',
);

/**
 * What the decorators cannot say: every error answer is JSON whatever the route's success type (a route
 * producing audio or SSE still answers errors with the error body), every answer carries the request id,
 * the proxied routes' answers carry the failover headers, a JSON body of another type is 415 and any proxy
 * key route may be rate limited (429).
 */
function completeDocument(document: OpenAPIObject): OpenAPIObject {
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const operation: OperationObject | undefined = item[method];
      if (!operation) continue;
      const proxyKey = (operation.security ?? []).some(
        (requirement: Record<string, string[]>) => 'proxy-key' in requirement,
      );
      const jsonBody =
        operation.requestBody &&
        'content' in operation.requestBody &&
        'application/json' in operation.requestBody.content;
      // MiniMax's own routes answer every error with HTTP 200 and a non-zero base_resp, as MiniMax does
      const minimaxNative = operation.tags?.includes('minimax') ?? false;
      if (proxyKey && !minimaxNative)
        operation.responses['429'] ??= {
          description: 'Rate limited (`SVC_RATE_LIMIT_RPM`); `Retry-After` says when to retry.',
        };
      if (jsonBody && !minimaxNative)
        operation.responses['415'] ??= { description: 'The body is not JSON (`unsupported_media_type`).' };
      for (const [status, response] of Object.entries(operation.responses) as Array<[string, ResponseObject]>) {
        if (Number(status) >= 400) {
          const examples = errorExamples(Number(status));
          response.content = {
            'application/json':
              Object.keys(examples).length > 0 ? { schema: ERROR_SCHEMA, examples } : { schema: ERROR_SCHEMA },
          };
        }
        // an event stream is text, not one JSON document: its events are described by the response's text
        const events = response.content?.['text/event-stream'];
        if (events) events.schema = { type: 'string', description: SSE_DESCRIPTION };
        const proxied = isProxiedPath(path) || (dialectFor(path)?.proxied(path) ?? false);
        const relays = proxied && CLIENT_FAULT_STATUSES.has(Number(status));
        const names = [
          'x-svc-request-id',
          'x-request-id',
          ...(proxied ? Object.keys(FAILOVER_HEADERS) : []),
          ...(relays ? ['x-svc-upstream-status'] : []),
        ];
        response.headers = {
          ...response.headers,
          ...Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }])),
        };
      }
    }
  }
  document.components = {
    ...document.components,
    headers: {
      'x-svc-request-id': REQUEST_ID,
      'x-request-id': SDK_REQUEST_ID,
      ...FAILOVER_HEADERS,
      'x-svc-upstream-status': UPSTREAM_STATUS,
    },
  };
  return document;
}

/**
 * @nestjs/swagger writes the document into Swagger UI's script with `String.replace`, where `` $` ``, `$'`, `$&`
 * and `$$` are replacement patterns: one of them in any text breaks the script and Swagger UI shows nothing.
 */
function assertSafeForSwaggerUi(document: OpenAPIObject): OpenAPIObject {
  const pattern = /\$[`'&$]/.exec(JSON.stringify(document));
  if (pattern)
    throw new Error(`the OpenAPI document contains '${pattern[0]}', which breaks Swagger UI's script; reword it`);
  return document;
}

/** The OpenAPI document, built the same way for /openapi.json, `npm run openapi` and the staleness test. */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setTitle('Voice consent, speech and failover gateway')
    .setDescription(
      'Gateway between applications and upstream AI providers: voice consent recordings, text-to-speech with ' +
        '`speech-02-hd`, and provider failover. Errors share one body: `{"error":{"message","type","param","code"}}`. ' +
        'Every response carries `x-svc-request-id` (and the same id as `x-request-id`, which the OpenAI SDKs read); chat completions and speech carry the failover headers too.\n\n' +
        "The WebSocket speech stream (`/v1/audio/speech/stream`, and MiniMax's `/ws/v1/t2a_v2`) is described by the AsyncAPI 3 document " +
        'served at `/asyncapi.json`: [read it in the console](../console/#stream-api). The [console](../console/) also speaks, records ' +
        'consents and shows provider health with your key.',
    )
    .setVersion('1');
  for (const [name, description] of OPENAPI_TAGS) builder.addTag(name, description);
  const config = builder
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', bearerFormat: 'sk-svc-…', description: 'Proxy key secret (`sk-svc-…`)' },
      'proxy-key',
    )
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'opaque token',
        description: 'Operator admin token (SVC_ADMIN_TOKEN)',
      },
      'admin',
    )
    .build();
  return assertSafeForSwaggerUi(
    withRequestExamples(
      completeDocument(
        withoutDtoSuffix(
          SwaggerModule.createDocument(app, config, {
            operationIdFactory: (controller, method) => `${controller.replace(/Controller$/, '')}_${method}`,
          }),
        ),
      ),
    ),
  );
}
