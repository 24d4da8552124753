import { ERROR_CODES, ErrorBody, ErrorCode, ErrorType } from './error-codes';

export interface DomainErrorOptions {
  param?: string | null;
  /** Overrides the code's usual status (e.g. `upstream_rejected` carries the upstream's status). */
  status?: number;
  headers?: Record<string, string>;
}

/** What services throw: a reason code, a message for the client, and the field at fault. */
export class DomainError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly param: string | null;
  readonly headers: Record<string, string>;

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
  }

  toBody(): ErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** The message for a body that is JSON but no object (an array, a string, a number, `null`). */
export const BODY_NOT_OBJECT = 'The request body must be a JSON object.';

export const notFound = (what: string, id: string, param: string): DomainError =>
  new DomainError('resource_not_found', `No ${what} found with id '${id}'.`, { param });
