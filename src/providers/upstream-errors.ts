import type { CallSignal } from '../common/call-signal';
import { UpstreamErrorFields, UpstreamFailure } from './provider-adapter';

/** What an upstream's failures become: the outcome the failover core classifies, and the upstream's own message. */

/** Error bodies are only read for their message; anything longer is cut off and the socket dropped. */
export const ERROR_BODY_CAP = 64 * 1024;
const MAX_MESSAGE_CHARS = 1000;

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** By name, not instanceof: AbortSignal.timeout's DOMException may come from another realm. */
function isTimeoutReason(reason: unknown): boolean {
  return isRecord(reason) && reason.name === 'TimeoutError';
}

/**
 * Why the call's signal fired: a TimeoutError reason (AbortSignal.timeout) is the step's timeout;
 * an UpstreamFailure reason is the core's own verdict; anything else is a cancel (client gone).
 */
export function abortFailure(reason: unknown): UpstreamFailure {
  if (reason instanceof UpstreamFailure) return reason;
  if (isTimeoutReason(reason)) return new UpstreamFailure({ kind: 'timeout' });
  return new UpstreamFailure({ kind: 'connection', code: 'ABORTED', message: 'request cancelled' });
}

function errorCode(err: unknown): string | undefined {
  if (!isRecord(err)) return undefined;
  const code = typeof err.code === 'string' ? err.code : undefined;
  const cause = isRecord(err.cause) && typeof err.cause.code === 'string' ? err.cause.code : undefined;
  // undici wraps a reset socket in UND_ERR_SOCKET; the OS code underneath says more
  return code === 'UND_ERR_SOCKET' && cause ? cause : code;
}

/** Maps whatever a transport call threw to the failure the core classifies. */
export function toUpstreamFailure(err: unknown, signal?: CallSignal): UpstreamFailure {
  if (err instanceof UpstreamFailure) return err;
  if (signal?.aborted) return abortFailure(signal.reason);
  if (isTimeoutReason(err)) return new UpstreamFailure({ kind: 'timeout' });
  const code = errorCode(err);
  if (code === 'UND_ERR_HEADERS_TIMEOUT') return new UpstreamFailure({ kind: 'timeout' });
  // undici's body timeout is the stream idle bound: the provider went silent mid-body
  if (code === 'UND_ERR_BODY_TIMEOUT')
    return new UpstreamFailure({
      kind: 'connection',
      code: 'STREAM_IDLE',
      message: 'the upstream sent nothing within its stream idle timeout',
    });
  const message = isRecord(err) && typeof err.message === 'string' ? err.message : undefined;
  return new UpstreamFailure({ kind: 'connection', ...(code ? { code } : {}), ...(message ? { message } : {}) });
}

/** The upstream's own error text: OpenAI and Anthropic `{error:{message}}`, `{message}`, `{detail}`, or short plain text. */
export function upstreamErrorMessage(text: string): string | undefined {
  const trimmed = text.trim();
  if (!trimmed) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch {
    if (trimmed.startsWith('<')) return undefined;
    // a JSON body cut at the cap: its message is still the useful part
    const cut = trimmed.startsWith('{') ? /"message"\s*:\s*"((?:[^"\\]|\\.)*)/.exec(trimmed) : null;
    return (cut ? cut[1] : trimmed).slice(0, MAX_MESSAGE_CHARS);
  }
  if (!isRecord(parsed)) return undefined;
  const { error } = parsed;
  const message = isRecord(error) ? error.message : (error ?? parsed.message ?? parsed.detail);
  return typeof message === 'string' && message ? message.slice(0, MAX_MESSAGE_CHARS) : undefined;
}

const MAX_FIELD_CHARS = 200;

const field = (value: unknown): string | undefined =>
  typeof value === 'string' && value ? value.slice(0, MAX_FIELD_CHARS) : undefined;

/** The `type`, `code` and `param` of an error body in OpenAI's (or Anthropic's) `{error:{...}}` shape, when it has them. */
export function upstreamErrorFields(text: string): UpstreamErrorFields | undefined {
  // a JSON error body is small and starts with `{`: anything else has no fields to relay
  if (!text.trimStart().startsWith('{')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const error = isRecord(parsed) ? parsed.error : undefined;
  if (!isRecord(error)) return undefined;
  const type = field(error.type);
  const code = field(error.code) ?? (typeof error.code === 'number' ? String(error.code) : undefined);
  const param = field(error.param);
  if (!type && !code) return undefined;
  return { ...(type ? { type } : {}), ...(code ? { code } : {}), ...(param ? { param } : {}) };
}

/** Longest Retry-After taken as said (a day); a longer or unreadable one is no Retry-After. */
const MAX_RETRY_AFTER_MS = 86_400_000;

/**
 * A `Retry-After` value (delay-seconds or an HTTP date, RFC 9110 §10.2.3) in ms from `now`; undefined when absent or
 * unreadable. A date in the past is 0.
 */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) {
    const ms = Number(text) * 1000;
    return ms <= MAX_RETRY_AFTER_MS ? ms : undefined;
  }
  // an HTTP date begins with its day's name ("Tue, 01 Dec 2026 ..."); Date.parse takes far more than that
  const at = /^[A-Za-z]{3},/.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(at)) return undefined;
  const ms = Math.max(0, at - now);
  return ms <= MAX_RETRY_AFTER_MS ? ms : undefined;
}

/**
 * A non-2xx answer as the failure the core classifies: its status, the upstream's message and error fields, and its
 * `Retry-After` (every HTTP adapter's refusals are built here, by UpstreamClient's relay and check and TextReading).
 */
export function httpFailure(status: number, text: string, retryAfter?: string): UpstreamFailure {
  const message = upstreamErrorMessage(text);
  const error = upstreamErrorFields(text);
  const retryAfterMs = parseRetryAfter(retryAfter);
  return new UpstreamFailure({
    kind: 'http',
    status,
    ...(message ? { message } : {}),
    ...(error ? { error } : {}),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  });
}
