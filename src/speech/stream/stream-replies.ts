import type { DomainError } from '../../common/errors/domain-error';
import { MINIMAX_CODES, minimaxCodeOf } from '../../common/errors/minimax-codes';

/** MiniMax's `base_resp`: 0 and "success", or MiniMax's code for the error. */
export interface BaseResp {
  status_code: number;
  status_msg: string;
}

export const SUCCESS: BaseResp = { status_code: 0, status_msg: 'success' };

/** MiniMax's code for one of ours, from the one table (src/common/errors/minimax-codes.ts); 1000 for what it leaves to HTTP. */
export function minimaxStatusOf(error: DomainError): number {
  return minimaxCodeOf(error) ?? MINIMAX_CODES.unknown;
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
