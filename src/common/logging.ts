import type { Params } from 'nestjs-pino';
import { stdSerializers } from 'pino';
import type { IncomingMessage } from 'node:http';
import { EnvironmentVariables } from '../config/env.schema';
import { requestIdOf } from './http/request-id';

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

/** Never log secrets carried in a query string (WebSocket clients may send `?api_key=`). */
const scrubUrl = (url: string | undefined): string | undefined => url?.replace(/([?&]api_key=)[^&]*/gi, '$1[redacted]');

/** JSON logs, one `request_id` on every line of a request, credentials redacted. */
export function loggerParams(env: EnvironmentVariables): Params {
  return {
    pinoHttp: {
      level: env.LOG_LEVEL,
      genReqId: (req: IncomingMessage) => requestIdOf(req),
      customAttributeKeys: { reqId: 'request_id' },
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-api-key"]'], censor: '[redacted]' },
      serializers: {
        err: errWithoutParameters,
        req: (req: { id: string; method: string; url: string; headers: Record<string, unknown> }) => ({
          id: req.id,
          method: req.method,
          url: scrubUrl(req.url),
          headers: { 'user-agent': req.headers['user-agent'], authorization: req.headers.authorization },
        }),
      },
      customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
    },
  };
}
