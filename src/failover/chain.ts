import type { UpstreamOutcome } from '../providers/provider-adapter';
import { Capability } from '../config/provider-kinds';
import { ChainStepDto } from '../config/chain-step.dto';
import { CONDUCT_DEFAULTS } from '../config/conduct.dto';

export const DEFAULT_TIMEOUT_MS = CONDUCT_DEFAULTS.timeoutMs;

/** One step a request may try, in the order it will try them. */
export interface PlannedStep {
  /** Position in the key's chain (the usage cap counts per chain position). */
  chainIndex: number;
  /** 0 for the entry step, 1.. for the fallbacks (the `x-svc-fallback-level` value). */
  level: number;
  provider: string;
  model: string;
  /** The deadline of this attempt: the step's own `timeout_ms`, else the provider's. */
  timeoutMs: number;
  /** The provider's own `timeout_ms` (or the default): only a timeout past it is held against the shared circuit. */
  providerTimeoutMs: number;
  /** Streams: from the headers to the first data event; the step's, else the provider's, else the default. */
  firstTokenTimeoutMs: number;
  /** The provider's own `first_token_timeout_ms` (or the default), as `providerTimeoutMs` for the first token. */
  providerFirstTokenTimeoutMs: number;
  /** The longest silence between a stream's events once it has begun. */
  streamIdleTimeoutMs: number;
  /** Extra attempts on this step after a transient fault (decisions §3). */
  retries: number;
  /** A 429 whose Retry-After is longer than this is not retried on this step. */
  retryAfterMaxMs: number;
  /** A provider with accounts: how long a call waits for a free account slot before the next step (§7). */
  queueTimeoutMs: number;
  step: ChainStepDto;
}

/** What `planRoute` needs to know about a provider; `ResolvedProvider` satisfies it. */
export interface ProviderFacts {
  capabilities: Capability[];
  timeoutMs: number | null;
  firstTokenTimeoutMs?: number;
  streamIdleTimeoutMs?: number;
  retries?: number;
  retryAfterMaxMs?: number;
  queueTimeoutMs?: number;
}

/** Entry step, then the later steps with the capability; null means 400 model_not_supported. */
export function planRoute(
  chain: ChainStepDto[],
  requestedModel: string,
  capability: Capability,
  providerOf: (name: string) => ProviderFacts | undefined,
  defaultTimeoutMs = DEFAULT_TIMEOUT_MS,
): PlannedStep[] | null {
  const serves = (step: ChainStepDto): ProviderFacts | undefined => {
    const provider = providerOf(step.provider);
    return provider?.capabilities.includes(capability) ? provider : undefined;
  };
  const entryIndex = chain.findIndex((step) => step.model === requestedModel && serves(step) !== undefined);
  if (entryIndex < 0) return null;

  const planned: PlannedStep[] = [];
  for (let chainIndex = entryIndex; chainIndex < chain.length; chainIndex++) {
    const step = chain[chainIndex];
    const provider = serves(step);
    if (!provider) continue;
    planned.push({
      chainIndex,
      level: planned.length,
      provider: step.provider,
      model: step.model,
      timeoutMs: step.timeout_ms ?? provider.timeoutMs ?? defaultTimeoutMs,
      providerTimeoutMs: provider.timeoutMs ?? defaultTimeoutMs,
      firstTokenTimeoutMs:
        step.first_token_timeout_ms ?? provider.firstTokenTimeoutMs ?? CONDUCT_DEFAULTS.firstTokenTimeoutMs,
      providerFirstTokenTimeoutMs: provider.firstTokenTimeoutMs ?? CONDUCT_DEFAULTS.firstTokenTimeoutMs,
      streamIdleTimeoutMs:
        step.stream_idle_timeout_ms ?? provider.streamIdleTimeoutMs ?? CONDUCT_DEFAULTS.streamIdleTimeoutMs,
      retries: step.retries ?? provider.retries ?? CONDUCT_DEFAULTS.retries,
      retryAfterMaxMs: step.retry_after_max_ms ?? provider.retryAfterMaxMs ?? CONDUCT_DEFAULTS.retryAfterMaxMs,
      queueTimeoutMs: step.queue_timeout_ms ?? provider.queueTimeoutMs ?? CONDUCT_DEFAULTS.queueTimeoutMs,
      step,
    });
  }
  return planned;
}

/**
 * success: answer the client; next: try the next step; client_error: relay the upstream's refusal;
 * misconfigured_step: the refusal names the step (its model's window, its model gone), not the client: the next step.
 */
export type Verdict = 'success' | 'next' | 'client_error' | 'misconfigured_step';

/** Why a step refused a request that another step may take (the `reason` label of svc_step_misconfigured_total). */
export type StepMisfit = 'context_length' | 'model_not_found';

export interface Classification {
  verdict: Verdict;
  /** Whether the attempt counts as a consecutive failure for the provider's circuit breaker. */
  breakerFailure: boolean;
  /** Short, header-safe text for the failover alert, e.g. `HTTP 503`. */
  reason: string;
  /** With `misconfigured_step`: what the step's refusal said about the step. */
  misfit?: StepMisfit;
}

/** Statuses that mean the client's request is at fault: another provider would refuse it too. */
export const CLIENT_FAULT_STATUSES: ReadonlySet<number> = new Set([400, 404, 413, 415, 422]);

const CONNECTION_ERRORS: ReadonlyMap<string, string> = new Map([
  ['ECONNREFUSED', 'connection refused'],
  ['ECONNRESET', 'connection reset'],
  ['ENOTFOUND', 'host not found'],
  ['EAI_AGAIN', 'DNS lookup failed'],
  ['ETIMEDOUT', 'connection timed out'],
  ['EHOSTUNREACH', 'host unreachable'],
  ['ENETUNREACH', 'network unreachable'],
  ['EPIPE', 'connection closed'],
  ['UND_ERR_SOCKET', 'connection closed'],
  ['UND_ERR_CONNECT_TIMEOUT', 'connection timed out'],
]);

const MAX_DETAIL_CHARS = 120;

/** The reason of a deadline that passed while the call waited for a free socket of the provider's pool. */
export const LOCAL_QUEUE_REASON = 'timeout waiting for a free upstream socket';
/** The codes of a prompt longer than the step's model takes (OpenAI's, and compatible servers'). */
const CONTEXT_LENGTH_CODES: ReadonlySet<string> = new Set([
  'context_length_exceeded',
  'string_above_max_length',
  'context_window_exceeded',
]);
/** The same said in words (Anthropic's "prompt is too long", vLLM's "maximum context length", ...). */
const CONTEXT_LENGTH_TEXT =
  /prompt is too long|context[_ ]length|context window|maximum context|too many (?:input )?tokens|exceeds the model's (?:maximum|max)/i;
/** The codes of a model that does not exist (any more) on the upstream. */
const MODEL_GONE_CODES: ReadonlySet<string> = new Set(['model_not_found', 'model_decommissioned', 'model_deprecated']);
/** A 404 that names the model as what is missing ("The model 'x' does not exist", Anthropic's "model: x"). */
const MODEL_GONE_TEXT = /\bmodel\b.*(?:does not exist|not found|no longer|retired|deprecated|decommissioned)|^model:/i;

/**
 * A refusal that names the step rather than the client's request (decisions §3): the prompt is longer than the
 * step's model takes, or the step's model does not exist or was retired. Null for every other refusal.
 */
export function stepMisfit(status: number, message?: string, code?: string, type?: string): StepMisfit | null {
  if (status !== 400 && status !== 404 && status !== 413 && status !== 422) return null;
  if (code !== undefined && MODEL_GONE_CODES.has(code)) return 'model_not_found';
  if (code !== undefined && CONTEXT_LENGTH_CODES.has(code)) return 'context_length';
  if (
    status === 404 &&
    message !== undefined &&
    (MODEL_GONE_TEXT.test(message) || (type === 'not_found_error' && /\bmodel\b/i.test(message)))
  )
    return 'model_not_found';
  if (status !== 404 && message !== undefined && CONTEXT_LENGTH_TEXT.test(message)) return 'context_length';
  return null;
}

/** The reason ends up in a response header, where Node refuses non-Latin-1 and control characters. */
function headerSafe(text: string): string {
  const flat = text
    .replace(/\s+/g, ' ')
    .replace(/[^\x20-\x7e]/g, '?')
    .trim();
  return flat.length > MAX_DETAIL_CHARS ? `${flat.slice(0, MAX_DETAIL_CHARS - 3)}...` : flat;
}

function describeConnection(code: string | undefined, message: string | undefined): string {
  const known = code ? CONNECTION_ERRORS.get(code) : undefined;
  if (known) return `${known} (${code})`;
  if (code) return `connection error (${headerSafe(code)})`;
  return message ? `connection error: ${headerSafe(message)}` : 'connection error';
}

/**
 * `providerTimeoutMs`, `providerFirstTokenMs`: the provider's own deadlines; a timeout of a shorter deadline (a key's
 * step `timeout_ms` or `first_token_timeout_ms`) fails that request over but is that key's choice, not the provider's
 * fault (decisions §11).
 */
export function classify(
  outcome: UpstreamOutcome,
  providerTimeoutMs?: number,
  providerFirstTokenMs?: number,
): Classification {
  switch (outcome.kind) {
    case 'ok':
      return { verdict: 'success', breakerFailure: false, reason: 'ok' };
    case 'timeout': {
      // a wait for a free upstream socket is the gateway's own queue: next step, the circuit untouched (§11)
      if (outcome.local) return { verdict: 'next', breakerFailure: false, reason: LOCAL_QUEUE_REASON };
      // the first-token deadline is held against the provider's own first_token_timeout_ms the same way
      const own = outcome.phase === 'first_token' ? providerFirstTokenMs : providerTimeoutMs;
      const ownDeadline = outcome.afterMs === undefined || own === undefined || outcome.afterMs >= own;
      const reason = outcome.phase === 'first_token' ? 'first token timeout' : 'timeout';
      return { verdict: 'next', breakerFailure: ownDeadline, reason };
    }
    case 'connection':
      return { verdict: 'next', breakerFailure: true, reason: describeConnection(outcome.code, outcome.message) };
    case 'provider_error': {
      const detail = outcome.message ? `: ${headerSafe(outcome.message)}` : '';
      // decisions §3 fails over on any base_resp error; one that blames the request does not count against the
      // breaker, or one tenant's refused text could take the provider out for every tenant
      return {
        verdict: 'next',
        breakerFailure: !outcome.requestFault,
        reason: `provider error ${headerSafe(String(outcome.code))}${detail}`,
      };
    }
    case 'http': {
      const reason = `HTTP ${outcome.status}`;
      if (CLIENT_FAULT_STATUSES.has(outcome.status)) {
        const misfit = stepMisfit(outcome.status, outcome.message, outcome.error?.code, outcome.error?.type);
        // not the provider's health either: the breaker is untouched
        if (misfit)
          return { verdict: 'misconfigured_step', breakerFailure: false, reason: `${reason} ${misfit}`, misfit };
        return { verdict: 'client_error', breakerFailure: false, reason };
      }
      // 401/403/402 blame the provider's own account; a 1xx-3xx reported as a failure is a broken upstream
      return { verdict: 'next', breakerFailure: true, reason };
    }
  }
}

/** The `message` of the failover alert header and webhook. */
export function alertMessage(exhausted: string, reason: string, active: string, level: number): string {
  return `${exhausted} failed (${reason}); served by ${active} at level ${level}`;
}
