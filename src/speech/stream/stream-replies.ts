import type { DomainError } from '../../common/errors/domain-error';
import type { ErrorType } from '../../common/errors/error-codes';

/** MiniMax's `base_resp`: 0 and "success", or MiniMax's code for the error. */
export interface BaseResp {
  status_code: number;
  status_msg: string;
}

export const SUCCESS: BaseResp = { status_code: 0, status_msg: 'success' };

/** MiniMax's status codes (its error code reference): what a MiniMax client branches on. */
const MINIMAX_STATUS = {
  unknown: 1000,
  timeout: 1001,
  rateLimit: 1002,
  auth: 1004,
  invalidParameters: 2013,
} as const;

const BY_TYPE: Record<ErrorType, number> = {
  invalid_request_error: MINIMAX_STATUS.invalidParameters,
  authentication_error: MINIMAX_STATUS.auth,
  permission_error: MINIMAX_STATUS.auth,
  not_found_error: MINIMAX_STATUS.invalidParameters,
  rate_limit_error: MINIMAX_STATUS.rateLimit,
  upstream_error: MINIMAX_STATUS.unknown,
  api_error: MINIMAX_STATUS.unknown,
};

/** MiniMax's code for one of ours: 1004 auth, 2013 invalid parameters, 1002 rate limit, 1001 timeout, else 1000 (all providers failed, unknown). */
export function minimaxStatusOf(error: DomainError): number {
  if (error.code === 'upstream_timeout') return MINIMAX_STATUS.timeout;
  // a full local audio pool: MiniMax's "retry later" code, as minimax-errors.ts says
  if (error.code === 'busy') return MINIMAX_STATUS.rateLimit;
  return BY_TYPE[error.type];
}

export function baseRespOf(error: DomainError): BaseResp {
  return { status_code: minimaxStatusOf(error), status_msg: error.message };
}

/** MiniMax's `extra_info` of the last audio message of one `task_continue`. */
export interface ExtraInfo {
  /** Milliseconds of audio made for this text. */
  audio_length: number;
  audio_sample_rate: number;
  /** Bytes of audio sent for this text (decoded from hex). */
  audio_size: number;
  audio_format: string;
  audio_channel: number;
  /** Characters of this text that are billed (as usage records count them). */
  usage_characters: number;
  /** mp3 only, as MiniMax sends it. */
  bitrate?: number;
}

/** The fields every server message carries (decisions §7). */
export interface Envelope {
  session_id: string;
  /** The request id of the upgrade (its `x-svc-request-id`). */
  trace_id: string;
  base_resp: BaseResp;
}

/** A `task_failed` message: our error (code, message) and MiniMax's code for it. */
export function taskFailed(sessionId: string, traceId: string, error: DomainError): object {
  return {
    event: 'task_failed',
    session_id: sessionId,
    trace_id: traceId,
    error: { code: error.code, message: error.message },
    base_resp: baseRespOf(error),
  };
}
