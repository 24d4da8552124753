import { HttpException } from '@nestjs/common';
import { pathOnly } from '../http/scrub-url';
import { ERROR_CODES, ErrorBody, ErrorCode, ErrorType } from './error-codes';

export interface DomainErrorOptions {
  param?: string | null;
  /** Overrides the code's usual status (e.g. `upstream_rejected` carries the upstream's status). */
  status?: number;
  headers?: Record<string, string>;
  /** An upstream's own `type`, `code` and `param`, shown instead of the code's (a relayed refusal, decisions §3). */
  relayed?: RelayedFields;
}

/** The error fields an upstream gave, relayed to the client as they were. */
export interface RelayedFields {
  /** One of the documented categories (decisions §5): the upstream's when it is one. */
  type: ErrorType;
  code: string;
  param: string | null;
}

/** What services throw: a reason code, a message for the client, and the field at fault. */
export class DomainError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly param: string | null;
  readonly headers: Record<string, string>;
  readonly relayed: RelayedFields | null;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: DomainErrorOptions = {},
  ) {
    const status = options.status ?? ERROR_CODES[code].status;
    // a client error's stack is never logged or shown: not capturing it makes every 4xx cheaper
    const stackTraceLimit = Error.stackTraceLimit;
    if (status < 500) Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'DomainError';
    this.status = status;
    this.type = ERROR_CODES[code].type;
    this.param = options.param ?? null;
    this.headers = options.headers ?? {};
    this.relayed = options.relayed ?? null;
  }

  toBody(): ErrorBody {
    const relayed = this.relayed;
    if (relayed)
      return { error: { message: this.message, type: relayed.type, param: relayed.param, code: relayed.code } };
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** The message for a body that is JSON but no object (an array, a string, a number, `null`). */
export const BODY_NOT_OBJECT = 'The request body must be a JSON object.';

export const notFound = (what: string, id: string, param: string): DomainError =>
  new DomainError('resource_not_found', `No ${what} found with id '${id}'.`, { param });

/** body-parser and raw-body tag their errors with a `type`; map those to our codes. */
const PARSER_ERRORS: Record<string, { code: ErrorCode; message: string }> = {
  'entity.parse.failed': { code: 'invalid_json', message: 'The request body is not valid JSON.' },
  'entity.too.large': { code: 'body_too_large', message: 'The request body is larger than the 1 MiB limit.' },
  'encoding.unsupported': { code: 'unsupported_media_type', message: 'Unsupported content encoding.' },
  'charset.unsupported': { code: 'unsupported_media_type', message: 'Unsupported charset.' },
  'request.aborted': { code: 'invalid_value', message: 'The request was aborted by the client.' },
};

/**
 * Whether a body the strict JSON parser refused is JSON all the same, just not an object or array
 * (`null`, `42`, `"text"`): both readers refuse it before parsing and keep its text in `body`.
 */
function isJsonScalar(body: unknown): boolean {
  if (typeof body !== 'string') return false;
  const text = body.replace(/^\uFEFF?[ \t\n\r]*/, '');
  if (text.length === 0 || text[0] === '{' || text[0] === '[') return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const CONNECTION_FAILURES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  '57P01',
  '57P03',
  '08006',
  '08001',
]);
/** A statement cancelled at its deadline (DB_STATEMENT_TIMEOUT_MS): the database cannot answer in time now. */
const STATEMENT_TIMEOUT = '57014';

/** PostgreSQL refusing text (a NUL, an unpaired surrogate): the input pipe refuses these first; this is the safety net. */
const UNSTORABLE_TEXT = new Set(['22021', '22P05']);

/** An http-errors error a body parser raised without a `type` (e.g. a gzip body that does not inflate). */
function fromParserStatus(error: { status?: unknown; expose?: unknown; message?: unknown }): DomainError | null {
  if (error.expose !== true || typeof error.status !== 'number' || error.status < 400 || error.status >= 500)
    return null;
  if (error.status === 413)
    return new DomainError('body_too_large', 'The request body is larger than the 1 MiB limit.');
  if (error.status === 415) return new DomainError('unsupported_media_type', 'Unsupported request body encoding.');
  const detail = typeof error.message === 'string' ? `: ${error.message}` : '';
  return new DomainError('invalid_value', `The request body could not be read${detail}.`, { status: 400 });
}

/** Turns anything thrown into a DomainError, so every response has the documented error body. */
export function toDomainError(exception: unknown): DomainError | null {
  if (exception instanceof DomainError) return exception;
  const tagged = exception as { type?: unknown; code?: unknown; message?: unknown; body?: unknown };
  if (typeof tagged?.type === 'string' && PARSER_ERRORS[tagged.type]) {
    const { code, message } = PARSER_ERRORS[tagged.type];
    // still invalid_json, the code of every body the parser refuses, but told what is wrong with it
    if (tagged.type === 'entity.parse.failed' && isJsonScalar(tagged.body))
      return new DomainError(code, BODY_NOT_OBJECT);
    return new DomainError(code, message);
  }
  if (exception instanceof HttpException) return fromHttpException(exception);
  const parserError = tagged ? fromParserStatus(tagged) : null;
  if (parserError) return parserError;
  if (typeof tagged?.code === 'string' && UNSTORABLE_TEXT.has(tagged.code)) {
    return new DomainError(
      'invalid_value',
      'The request holds text that cannot be stored (a NUL character or invalid Unicode).',
    );
  }
  if (typeof tagged?.code === 'string' && (CONNECTION_FAILURES.has(tagged.code) || tagged.code === STATEMENT_TIMEOUT)) {
    return new DomainError('database_unavailable', 'The database is unavailable; retry shortly.');
  }
  if (
    typeof tagged?.message === 'string' &&
    /Connection terminated|connection is not established|timeout exceeded when trying to connect|Query read timeout/i.test(
      tagged.message,
    )
  ) {
    return new DomainError('database_unavailable', 'The database is unavailable; retry shortly.');
  }
  return null;
}

function fromHttpException(exception: HttpException): DomainError {
  const status = exception.getStatus();
  const message = exception.message;
  switch (status) {
    case 404:
      // the target without its query string: it may hold a credential (`?api_key=`), and error bodies are echoed and logged
      return new DomainError(
        'route_not_found',
        message.startsWith('Cannot ') ? `Unknown route: ${pathOnly(message.slice(7))}.` : message,
      );
    case 405:
      return new DomainError('method_not_allowed', message);
    case 413:
      return new DomainError('file_too_large', 'The uploaded file is larger than the 10 MiB limit.');
    case 415:
      return new DomainError('unsupported_media_type', message);
    default:
      // multer and Nest's own pipes raise 400s for malformed multipart or parameters
      if (status >= 400 && status < 500) return new DomainError('invalid_value', message, { status });
      return new DomainError('internal_error', 'The server had an error while processing the request.');
  }
}
