import { PinoLogger, type Params } from 'nestjs-pino';
import { pinoHttp } from 'pino-http';
import type { HttpLogger, Options } from 'pino-http';
import { destination, stdSerializers } from 'pino';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { EnvironmentVariables } from './env.schema';
import { requestIdOf } from '../common/http/request-id';
import { REDACTED, scrubUrl } from '../common/http/scrub-url';
import { tracing } from '../tracing/tracing';

/**
 * An error as pino writes it, without SQL parameters: a failed write may hold a secret being stored
 * (an endpoint's signing secret), and TypeORM's QueryFailedError carries every parameter.
 */
const errWithoutParameters = (err: Error | Record<string, unknown>): Record<string, unknown> => {
  // pino-http hands over the error already serialized; the app logger, the Error itself
  const out: Record<string, unknown> = err instanceof Error ? { ...stdSerializers.err(err) } : { ...err };
  delete out.parameters;
  return out;
};

/** Log lines leave in blocks of about this many bytes (one write per block, not one per line; sonic-boom wants it under its 16 KiB maxWrite)... */
const LOG_BLOCK_BYTES = 8 * 1024;
/** ...and at least this often; what is still pending at exit is written synchronously (pino's exit hook). */
const LOG_FLUSH_MS = 100;

/**
 * JSON logs, credentials redacted, written to stdout off the request path. nestjs-pino's own middleware is
 * applied to no route (`forRoutes: []`): it binds each request's logger in an AsyncLocalStorage, and on Node 20
 * that turns on a promise hook for every promise of the process (without it the chat routes answer 7 to 10 %
 * more requests a second: docs/performance.md). The request line is written by requestLineMiddleware (and the
 * chat fast path) instead, with the same options; a line written while serving a request names it with
 * `request_id` (`requestFields`).
 */
export function loggerParams(env: EnvironmentVariables): Params {
  const options = httpLoggerOptions(env);
  if (env.LOG_LEVEL === 'silent') return { pinoHttp: options, forRoutes: [] };
  return {
    pinoHttp: [options, destination({ dest: 1, sync: false, minLength: LOG_BLOCK_BYTES, periodicFlush: LOG_FLUSH_MS })],
    forRoutes: [],
  };
}

/**
 * The field that ties a log line to the request it was written for (the request line has it as `req.id`), and
 * while traces are on, the ids of the request's trace and SERVER span when it is sampled (decisions §12).
 */
export const requestFields = (requestId: string): { request_id: string; trace_id?: string; span_id?: string } =>
  tracing.on ? { request_id: requestId, ...tracing.logFieldsOf(requestId) } : { request_id: requestId };

/** pino-http on nestjs-pino's root logger, made on first use (the root exists once LoggerModule is configured). */
export function requestLineWriter(env: EnvironmentVariables): () => HttpLogger {
  let writer: HttpLogger | null = null;
  return () => (writer ??= pinoHttp({ ...httpLoggerOptions(env), logger: PinoLogger.root }));
}

/**
 * Every request's line (`request completed`, with the status, time and who served), on the Express chain
 * right after the request id: a request refused before its body is read (no key, an unknown one, its rate
 * limit) or whose body is refused (not JSON, too large) gets its line too, so the id its error names is in the log.
 */
export function requestLineMiddleware(
  env: EnvironmentVariables,
): (req: IncomingMessage, res: ServerResponse, next: () => void) => void {
  const writer = requestLineWriter(env);
  return (req, res, next) => {
    writer()(req, res);
    next();
  };
}

/** pino-http's options: the Nest middleware's, and the chat fast path's (which logs the same line). */
export function httpLoggerOptions(env: EnvironmentVariables): Options {
  return {
    level: env.LOG_LEVEL,
    genReqId: (req: IncomingMessage) => requestIdOf(req),
    customAttributeKeys: { reqId: 'request_id' },
    // the serializers get the raw objects: pino's wrapped ones copy every request field and every response
    // header first, only for these few to be kept
    wrapSerializers: false,
    serializers: {
      err: errWithoutParameters,
      // only these headers are written, the credential as a marker: a serializer is much cheaper than pino's redact paths
      req: (req: IncomingMessage & { id?: unknown; originalUrl?: string }) => ({
        id: req.id,
        method: req.method,
        url: scrubUrl(req.originalUrl ?? req.url),
        headers: {
          'user-agent': req.headers['user-agent'],
          authorization: req.headers.authorization === undefined ? undefined : REDACTED,
        },
      }),
      // the response headers kept: what it was, how long, and who served it (why a fallback happened is in the usage record's attempts)
      res: (res: ServerResponse) => ({
        statusCode: res.statusCode,
        headers: {
          'content-type': res.getHeader('content-type'),
          'content-length': res.getHeader('content-length'),
          'x-svc-provider-used': res.getHeader('x-svc-provider-used'),
          'x-svc-fallback-level': res.getHeader('x-svc-fallback-level'),
        },
      }),
    },
    customLogLevel: (_req, res, err) =>
      err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info',
    // only while traces are on (tracing starts before the application): the line names the request's trace and span
    ...(tracing.on ? traceIdOnRequestLine : {}),
  };
}

/** The request line's `trace_id` and `span_id` (decisions §12): pino-http's own objects, plus the fields. */
const traceIdOnRequestLine: Pick<Options, 'customSuccessObject' | 'customErrorObject'> = {
  customSuccessObject: (req: IncomingMessage, _res: ServerResponse, value: Record<string, unknown>) =>
    withTraceFields(req, value),
  customErrorObject: (req: IncomingMessage, _res: ServerResponse, _err: Error, value: Record<string, unknown>) =>
    withTraceFields(req, value),
};

/** pino-http's object as it is when the request was not sampled (most, at a low ratio): no copy. */
function withTraceFields(req: IncomingMessage, value: Record<string, unknown>): Record<string, unknown> {
  const fields = tracing.logFieldsOfRequest(req);
  return fields ? { ...value, ...fields } : value;
}
