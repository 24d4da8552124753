import type { UpstreamOutcome } from './provider-adapter';

/**
 * Attempts on a step (decisions §3), decided in this one place for every path (chat, speech, tasks, the speech
 * stream): whether a failed attempt is tried again on the same step, and after what wait. The executor's step loop
 * (step-attempts.ts) asks; adapters only report what the upstream said (its status, its `Retry-After`).
 */

/** The wait before a retry when the upstream named none: random in this range, so retries of many requests spread. */
export const RETRY_JITTER_MS = { min: 100, max: 500 } as const;

/** Connection faults before any response that another attempt may cure (a reset or a refusal, decisions §3). */
const TRANSIENT_CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'UND_ERR_SOCKET',
]);

/** Statuses of a passing fault of the provider's: 429 only with a short enough Retry-After. */
const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([500, 502, 503, 504]);

export interface RetryRule {
  /** Extra attempts allowed on the step (`retries`). */
  retries: number;
  /** A Retry-After longer than this is not waited for on the step (`retry_after_max_ms`). */
  retryAfterMaxMs: number;
}

/** What the loop knows of one failed attempt besides its outcome. */
export interface FailedAttempt {
  /** 1 for the step's first attempt. */
  number: number;
  /** A stream's headers had come: a connection fault then is not "before any response". */
  afterHeaders: boolean;
}

const jitter = (random: () => number): number =>
  Math.round(RETRY_JITTER_MS.min + random() * (RETRY_JITTER_MS.max - RETRY_JITTER_MS.min));

/**
 * The wait in ms before another attempt on the same step, or null when the step is not tried again: its retries are
 * spent, or the fault is not transient. Never retried: a timeout (a silent provider only multiplies the wait), a 429
 * without or with a longer Retry-After, 401/402/403, a step's misfit, the client's errors, a provider's own error code.
 */
export function retryWait(
  outcome: UpstreamOutcome,
  attempt: FailedAttempt,
  rule: RetryRule,
  random: () => number = Math.random,
): number | null {
  if (attempt.number > rule.retries) return null;
  switch (outcome.kind) {
    case 'connection':
      return !attempt.afterHeaders && outcome.code !== undefined && TRANSIENT_CONNECTION_CODES.has(outcome.code)
        ? jitter(random)
        : null;
    case 'http': {
      const said = outcome.retryAfterMs;
      // the upstream asked for a longer pause than the step allows: the next step now
      if (said !== undefined && said > rule.retryAfterMaxMs) return null;
      if (outcome.status === 429) return said ?? null;
      return TRANSIENT_STATUSES.has(outcome.status) ? (said ?? jitter(random)) : null;
    }
    case 'ok':
    case 'timeout':
    case 'provider_error':
      return null;
  }
}

/** The Retry-After an upstream gave with a failure, in ms (the smallest is the final error's, decisions §3). */
export const retryAfterOf = (outcome: UpstreamOutcome): number | undefined =>
  outcome.kind === 'http' ? outcome.retryAfterMs : undefined;

/** A Retry-After header's value (whole seconds, at least 1) for a wait in ms. */
export const retryAfterHeader = (ms: number): string => String(Math.max(1, Math.ceil(ms / 1000)));
