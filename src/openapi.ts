import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { isProxiedPath } from './common/http/proxied-routes';

type OperationObject = NonNullable<OpenAPIObject['paths'][string]['get']>;
type ResponseObject = Extract<OperationObject['responses'][string], { description: string }>;
type HeaderObject = { description: string; schema: { type: string } };

const SSE_DESCRIPTION =
  'Server-sent events: `data: {chat.completion.chunk with "provider"}` lines, then `data: [DONE]`; an upstream fault after the first ' +
  'byte ends the stream with `data: {"error":{…}}` and no `[DONE]`.';
const ERROR_SCHEMA = { $ref: '#/components/schemas/ErrorResponseDto' };
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

const header = (description: string, type: 'string' | 'boolean' | 'integer'): HeaderObject => ({ description, schema: { type } });
const REQUEST_ID = header('Correlates the request with usage records, logs and webhook events (`req_…`).', 'string');
const SDK_REQUEST_ID = header('The same id as `x-svc-request-id`, under the name the OpenAI SDKs read (`_request_id`, `APIError.requestID`).', 'string');
/** Interface §6.3 and decisions §4: on every answer of a proxied route, errors included. */
const FAILOVER_HEADERS: Record<string, HeaderObject> = {
  'x-svc-provider-used': header('Provider that served the request (`none` when no step served it).', 'string'),
  'x-svc-is-fallback': header('`true` when a fallback step served it (or the chain went past its entry step).', 'boolean'),
  'x-svc-fallback-level': header('Depth in the chain: 0 for the entry step, 1 or more for a fallback.', 'integer'),
  'x-svc-fallback-alert': header(
    'Only when a failover happened: JSON `{"message","exhausted_provider","active_provider","fallback_level"}`.',
    'string',
  ),
};

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
      const proxyKey = (operation.security ?? []).some((requirement: Record<string, string[]>) => 'proxy-key' in requirement);
      const jsonBody = operation.requestBody && 'content' in operation.requestBody && 'application/json' in operation.requestBody.content;
      if (proxyKey) operation.responses['429'] ??= { description: 'Rate limited (`SVC_RATE_LIMIT_RPM`); `Retry-After` says when to retry.' };
      if (jsonBody) operation.responses['415'] ??= { description: 'The body is not JSON (`unsupported_media_type`).' };
      for (const [status, response] of Object.entries(operation.responses) as Array<[string, ResponseObject]>) {
        if (Number(status) >= 400) response.content = { 'application/json': { schema: ERROR_SCHEMA } };
        // an event stream is text, not one JSON document: its events are described by the response's text
        const events = response.content?.['text/event-stream'];
        if (events) events.schema = { type: 'string', description: SSE_DESCRIPTION };
        const names = ['x-svc-request-id', 'x-request-id', ...(isProxiedPath(path) ? Object.keys(FAILOVER_HEADERS) : [])];
        response.headers = { ...response.headers, ...Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }])) };
      }
    }
  }
  document.components = { ...document.components, headers: { 'x-svc-request-id': REQUEST_ID, 'x-request-id': SDK_REQUEST_ID, ...FAILOVER_HEADERS } };
  return document;
}

/** The OpenAPI document, built the same way for /openapi.json, `npm run openapi` and the staleness test. */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Voice consent, speech and failover gateway')
    .setDescription(
      'Gateway between applications and upstream AI providers: voice consent recordings, text-to-speech with ' +
        '`speech-02-hd`, and provider failover. Errors share one body: `{"error":{"message","type","param","code"}}`. ' +
        'Every response carries `x-svc-request-id` (and the same id as `x-request-id`, which the OpenAI SDKs read); chat completions and speech carry the failover headers too.\n\n' +
        'The WebSocket speech stream (`/v1/audio/speech/stream`, and MiniMax\'s `/ws/v1/t2a_v2`) is described by the AsyncAPI 3 document ' +
        'served at `/asyncapi.json`: [read it in the console](../console/#stream-api). The [console](../console/) also speaks, records ' +
        'consents and shows provider health with your key.',
    )
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'sk-svc-…', description: 'Proxy key secret (`sk-svc-…`)' }, 'proxy-key')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'opaque token', description: 'Operator admin token (SVC_ADMIN_TOKEN)' }, 'admin')
    .build();
  return completeDocument(
    SwaggerModule.createDocument(app, config, { operationIdFactory: (controller, method) => `${controller.replace(/Controller$/, '')}_${method}` }),
  );
}
