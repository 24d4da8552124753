import { DomainError } from '../common/errors/domain-error';
import { isErrorType } from '../common/errors/error-codes';
import type { GatewayConfig } from '../config/gateway-config';
import type { Capability } from '../config/provider-kinds';
import type { AuthenticatedKey } from '../keys/key-directory';
import { modelIdsFor } from '../models/models';
import type { UpstreamFailure } from '../providers/provider-adapter';
import { retryAfterHeader } from '../providers/attempt-policy';
import type { PlannedStep } from './chain';
import { exhaustedHeaders, servedHeaders, type ServedBy } from './failover-headers';
import type { FailoverScope } from './failover-scope';
import { upstreamMessage } from './attempt-records';
import { unconfiguredNote } from './unconfigured-steps';
import type { AttemptTrace } from '../tracing/request-trace';

/** A step that failed (or was skipped) on the way, as the alert and the final error name it. */
export interface StepFailure {
  provider: string;
  reason: string;
  level: number;
}

/** Who answers: `step`, after `attempts` upstream attempts, past the last of `failures` (the exhausted provider). */
export function servedBy(step: PlannedStep, failures: StepFailure[], attempts: number): ServedBy {
  const exhausted = failures[failures.length - 1] ?? null;
  return {
    provider: step.provider,
    model: step.model,
    level: step.level,
    exhausted: exhausted && { provider: exhausted.provider, reason: exhausted.reason },
    attempts,
  };
}

/** An upstream's refusal of the client's request, relayed with its status and, in OpenAI's shape, its own fields. */
export function relayedError(
  scope: FailoverScope,
  step: PlannedStep,
  failures: StepFailure[],
  failure: UpstreamFailure,
  attempts: number,
): DomainError {
  const outcome = failure.outcome;
  const status = outcome.kind === 'http' ? outcome.status : 400;
  scope.served = servedBy(step, failures, attempts);
  const fields = outcome.kind === 'http' ? outcome.error : undefined;
  // only a body with a `code` is in OpenAI's shape: a client reads it as the provider wrote it (decisions §3)
  const relayed = fields?.code
    ? {
        // the body's documented categories (decisions §5); OpenAI's own refusals are invalid_request_error
        type: isErrorType(fields.type) ? fields.type : ('invalid_request_error' as const),
        code: fields.code,
        param: fields.param ?? null,
      }
    : undefined;
  const message =
    relayed && outcome.kind === 'http' && outcome.message
      ? outcome.message
      : `${step.provider} rejected the request: ${upstreamMessage(failure)}`;
  return new DomainError('upstream_rejected', message, {
    status,
    relayed,
    headers: { ...servedHeaders(scope.served), 'x-svc-upstream-status': String(status) },
  });
}

/**
 * No step served: `502 all_providers_failed` after at least one attempt, carrying the smallest Retry-After an
 * upstream gave (decisions §3); `503 no_provider_available` when every step was skipped, with `skippedRetryAfter`
 * (seconds until the soonest skipped step is served again). `why` names the steps left out as unconfigured.
 */
export function exhaustedError(
  failures: StepFailure[],
  attempts: number,
  why: string,
  upstreamRetryAfterMs: number | undefined,
  skippedRetryAfter: () => number,
): DomainError {
  const headers = exhaustedHeaders(failures, attempts);
  if (attempts === 0) {
    const retryAfter = skippedRetryAfter();
    if (Number.isFinite(retryAfter)) headers['Retry-After'] = String(retryAfter);
    return new DomainError(
      'no_provider_available',
      `Every provider of this request is unavailable (open circuit or usage cap); retry later.${why}`,
      { headers },
    );
  }
  if (upstreamRetryAfterMs !== undefined) headers['Retry-After'] = retryAfterHeader(upstreamRetryAfterMs);
  return new DomainError(
    'all_providers_failed',
    `Every provider failed: ${failures.map((f) => `${f.provider} (${f.reason})`).join(', ')}.${why}`,
    { headers },
  );
}

/** One failed attempt on a step, as the step loop hands it to `failed`. */
export interface FailedAttempt {
  scope: FailoverScope;
  planned: PlannedStep[];
  step: PlannedStep;
  failures: StepFailure[];
  /** Attempts sent by the request so far, this one included. */
  attempted: number;
  /** This attempt's number on its step (1: the first, 2: its retry...). */
  number: number;
  started: number;
  /** Its CLIENT span, while traces are on. */
  traced?: AttemptTrace;
  /** The circuit the attempt counts against: its account's (`provider/account`, decisions §7), else its provider's. */
  circuit: string;
  /** The account it used, for a provider with accounts. */
  accountName?: string;
}

/**
 * 400 model_not_supported: no step of the key's chain serves `model` for `capability`. Names the steps the key still
 * lists whose provider is gone (never skipped in silence) and the models it does offer.
 */
export function modelNotSupported(
  gateway: GatewayConfig,
  key: AuthenticatedKey,
  model: string,
  capability: Capability,
): DomainError {
  const offered = modelIdsFor(key.chain, gateway, capability);
  const choices =
    offered.length > 0 ? `Its ${capability} models: ${offered.join(', ')}.` : `It has no ${capability} model.`;
  const why = unconfiguredNote(gateway, key, capability, (step) => step.model === model);
  return new DomainError(
    'model_not_supported',
    `The model '${model}' is not served by any ${capability} step of this key's chain.${why} ${choices} GET /v1/models lists them.`,
    { param: 'model' },
  );
}
