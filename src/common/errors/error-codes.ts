/** OpenAI-style error categories (the `type` of the error body). */
export const ERROR_TYPES = [
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'rate_limit_error',
  'upstream_error',
  'api_error',
] as const;
export type ErrorType = (typeof ERROR_TYPES)[number];

const ERROR_TYPE_SET: ReadonlySet<string> = new Set(ERROR_TYPES);
export const isErrorType = (value: unknown): value is ErrorType =>
  typeof value === 'string' && ERROR_TYPE_SET.has(value);

/** Every specific reason the service reports, with its HTTP status and category. */
export const ERROR_CODES = {
  invalid_json: { status: 400, type: 'invalid_request_error' },
  missing_field: { status: 400, type: 'invalid_request_error' },
  unknown_field: { status: 400, type: 'invalid_request_error' },
  invalid_value: { status: 400, type: 'invalid_request_error' },
  invalid_cursor: { status: 400, type: 'invalid_request_error' },
  unknown_provider: { status: 400, type: 'invalid_request_error' },
  model_not_supported: { status: 400, type: 'invalid_request_error' },
  voice_not_found: { status: 400, type: 'invalid_request_error' },
  format_not_supported: { status: 400, type: 'invalid_request_error' },
  voice_creation_not_supported: { status: 400, type: 'invalid_request_error' },
  webhook_url_not_allowed: { status: 400, type: 'invalid_request_error' },
  webhook_limit_reached: { status: 400, type: 'invalid_request_error' },
  missing_api_key: { status: 401, type: 'authentication_error' },
  invalid_api_key: { status: 401, type: 'authentication_error' },
  invalid_ticket: { status: 401, type: 'authentication_error' },
  key_revoked: { status: 401, type: 'authentication_error' },
  admin_api_disabled: { status: 403, type: 'permission_error' },
  admin_token_required: { status: 403, type: 'permission_error' },
  route_not_found: { status: 404, type: 'not_found_error' },
  resource_not_found: { status: 404, type: 'not_found_error' },
  model_not_found: { status: 404, type: 'not_found_error' },
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  request_timeout: { status: 408, type: 'invalid_request_error' },
  task_not_completed: { status: 409, type: 'invalid_request_error' },
  task_failed: { status: 409, type: 'invalid_request_error' },
  consent_in_use: { status: 409, type: 'invalid_request_error' },
  task_expired: { status: 410, type: 'invalid_request_error' },
  file_too_large: { status: 413, type: 'invalid_request_error' },
  body_too_large: { status: 413, type: 'invalid_request_error' },
  text_too_long: { status: 413, type: 'invalid_request_error' },
  audio_too_long: { status: 413, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  headers_too_large: { status: 431, type: 'invalid_request_error' },
  rate_limited: { status: 429, type: 'rate_limit_error' },
  too_many_streams: { status: 429, type: 'rate_limit_error' },
  too_many_tasks: { status: 429, type: 'rate_limit_error' },
  quota_exceeded: { status: 429, type: 'rate_limit_error' },
  internal_error: { status: 500, type: 'api_error' },
  all_providers_failed: { status: 502, type: 'upstream_error' },
  upstream_stream_failed: { status: 502, type: 'upstream_error' },
  voice_creation_failed: { status: 502, type: 'upstream_error' },
  no_provider_available: { status: 503, type: 'upstream_error' },
  voice_unavailable: { status: 503, type: 'upstream_error' },
  database_unavailable: { status: 503, type: 'api_error' },
  not_ready: { status: 503, type: 'api_error' },
  busy: { status: 503, type: 'api_error' },
  upstream_timeout: { status: 504, type: 'upstream_error' },
  insufficient_storage: { status: 507, type: 'api_error' },
  upstream_rejected: { status: 400, type: 'invalid_request_error' },
} as const satisfies Record<string, { status: number; type: ErrorType }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * The body of every error response (decisions §5): a code of the table, or, on a refusal relayed from an
 * upstream, the upstream's own (decisions §3).
 */
export interface ErrorBody {
  error: { message: string; type: ErrorType; param: string | null; code: string | null };
}
