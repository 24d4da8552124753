import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DomainError } from '../common/errors/domain-error';
import type { ErrorCode } from '../common/errors/error-codes';
import type { ErrorDialect } from '../common/errors/error-dialects';
import { requestIdOf } from '../common/http/request-id';

/** MiniMax's `base_resp` of a success. */
export const MINIMAX_OK = { status_code: 0, status_msg: 'success' } as const;

/** MiniMax's codes (its public "Error Codes" reference): the ones a client of the gateway can meet. */
export const MINIMAX_CODES = {
  unknown: 1000,
  timeout: 1001,
  rateLimit: 1002,
  auth: 1004,
  invalidParams: 2013,
} as const;

/**
 * Every gateway error as MiniMax's `base_resp.status_code`; null: answered as the interface answers it
 * (a route or method that does not exist is an HTTP 404/405 at MiniMax too).
 */
const CODE_FOR: Record<ErrorCode, number | null> = {
  invalid_json: MINIMAX_CODES.invalidParams,
  missing_field: MINIMAX_CODES.invalidParams,
  unknown_field: MINIMAX_CODES.invalidParams,
  invalid_value: MINIMAX_CODES.invalidParams,
  invalid_cursor: MINIMAX_CODES.invalidParams,
  unknown_provider: MINIMAX_CODES.invalidParams,
  model_not_supported: MINIMAX_CODES.invalidParams,
  voice_not_found: MINIMAX_CODES.invalidParams,
  format_not_supported: MINIMAX_CODES.invalidParams,
  voice_creation_not_supported: MINIMAX_CODES.invalidParams,
  webhook_url_not_allowed: MINIMAX_CODES.invalidParams,
  webhook_limit_reached: MINIMAX_CODES.invalidParams,
  missing_api_key: MINIMAX_CODES.auth,
  invalid_api_key: MINIMAX_CODES.auth,
  invalid_ticket: MINIMAX_CODES.auth,
  key_revoked: MINIMAX_CODES.auth,
  admin_api_disabled: MINIMAX_CODES.auth,
  admin_token_required: MINIMAX_CODES.auth,
  route_not_found: null,
  resource_not_found: MINIMAX_CODES.invalidParams,
  model_not_found: MINIMAX_CODES.invalidParams,
  method_not_allowed: null,
  request_timeout: MINIMAX_CODES.timeout,
  task_not_completed: MINIMAX_CODES.invalidParams,
  task_failed: MINIMAX_CODES.unknown,
  consent_in_use: MINIMAX_CODES.invalidParams,
  task_expired: MINIMAX_CODES.invalidParams,
  file_too_large: MINIMAX_CODES.invalidParams,
  body_too_large: MINIMAX_CODES.invalidParams,
  text_too_long: MINIMAX_CODES.invalidParams,
  audio_too_long: MINIMAX_CODES.invalidParams,
  unsupported_media_type: MINIMAX_CODES.invalidParams,
  headers_too_large: MINIMAX_CODES.invalidParams,
  rate_limited: MINIMAX_CODES.rateLimit,
  too_many_streams: MINIMAX_CODES.rateLimit,
  too_many_tasks: MINIMAX_CODES.rateLimit,
  internal_error: MINIMAX_CODES.unknown,
  all_providers_failed: MINIMAX_CODES.unknown,
  voice_creation_failed: MINIMAX_CODES.unknown,
  no_provider_available: MINIMAX_CODES.unknown,
  database_unavailable: MINIMAX_CODES.unknown,
  not_ready: MINIMAX_CODES.unknown,
  upstream_timeout: MINIMAX_CODES.timeout,
  upstream_rejected: MINIMAX_CODES.invalidParams,
};

export interface BaseResp {
  status_code: number;
  status_msg: string;
}

/** `base_resp` of an error: MiniMax's code, the gateway's message (its own code in front, for support). */
export function baseRespFor(error: DomainError): BaseResp | null {
  const code = CODE_FOR[error.code];
  if (code === null) return null;
  return { status_code: code, status_msg: `${error.code}: ${error.message}` };
}

/** MiniMax puts the trace id in a header as well (its clients quote it in their error messages). */
export const TRACE_HEADER = 'Trace-Id';

/** The paths of the MiniMax-native surface (decisions §10). */
export const MINIMAX_PATHS = {
  t2a: '/v1/t2a_v2',
  t2aAsync: '/v1/t2a_async_v2',
  t2aAsyncQuery: '/v1/query/t2a_async_query_v2',
  filesRetrieve: '/v1/files/retrieve',
  filesUpload: '/v1/files/upload',
  getVoice: '/v1/get_voice',
  voiceClone: '/v1/voice_clone',
  voiceDesign: '/v1/voice_design',
} as const;

const OWNED: ReadonlySet<string> = new Set(Object.values(MINIMAX_PATHS));
const PROXIED: ReadonlySet<string> = new Set([MINIMAX_PATHS.t2a, MINIMAX_PATHS.voiceDesign]);

/** Errors of the MiniMax-native routes as MiniMax answers them: HTTP 200, a non-zero `base_resp.status_code`, the `trace_id`. */
export const MINIMAX_ERROR_DIALECT: ErrorDialect = {
  owns: (path) => OWNED.has(path),
  proxied: (path) => PROXIED.has(path),
  answer(error: DomainError, req: IncomingMessage, res: ServerResponse) {
    const baseResp = baseRespFor(error);
    if (!baseResp) return null;
    const traceId = requestIdOf(req);
    res.setHeader(TRACE_HEADER, traceId);
    return { status: 200, body: { trace_id: traceId, base_resp: baseResp } };
  },
};
