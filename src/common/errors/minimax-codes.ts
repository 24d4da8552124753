import type { DomainError } from './domain-error';
import type { ErrorCode } from './error-codes';

/*
 * The one table of MiniMax's `base_resp.status_code` values, for every surface that speaks MiniMax's dialect:
 * the native routes (src/minimax-compat), the speech WebSocket (src/speech/stream) and the MiniMax adapter, which
 * reads them from the upstream (src/providers/minimax-replies.ts).
 */

/** MiniMax's codes (its public "Error Codes" reference): the ones a client of the gateway can meet or an upstream sends. */
export const MINIMAX_CODES = {
  unknown: 1000,
  timeout: 1001,
  rateLimit: 1002,
  auth: 1004,
  /** The text was refused as sensitive content (upstream only: the request's fault, not the provider's). */
  sensitiveContent: 1026,
  invalidParams: 2013,
} as const;

/**
 * Every gateway error as MiniMax's `base_resp.status_code`; null: answered as the interface answers it
 * (a route or method that does not exist is an HTTP 404/405 at MiniMax too).
 */
const CODE_FOR = {
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
  quota_exceeded: MINIMAX_CODES.rateLimit,
  internal_error: MINIMAX_CODES.unknown,
  all_providers_failed: MINIMAX_CODES.unknown,
  upstream_stream_failed: MINIMAX_CODES.unknown,
  voice_creation_failed: MINIMAX_CODES.unknown,
  no_provider_available: MINIMAX_CODES.unknown,
  voice_unavailable: MINIMAX_CODES.unknown,
  database_unavailable: MINIMAX_CODES.unknown,
  not_ready: MINIMAX_CODES.unknown,
  // a full local audio pool: MiniMax's "retry later" code
  busy: MINIMAX_CODES.rateLimit,
  upstream_timeout: MINIMAX_CODES.timeout,
  insufficient_storage: MINIMAX_CODES.unknown,
  upstream_rejected: MINIMAX_CODES.invalidParams,
} as const satisfies Record<ErrorCode, number | null>;

/** MiniMax's code for a gateway error; null: a missing route or method, which MiniMax answers as HTTP 404/405 too. */
export function minimaxCodeOf(error: DomainError): number | null {
  return CODE_FOR[error.code];
}
