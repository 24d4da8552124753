import type { StepAttempt } from '../providers/step-attempts';
import type { UpstreamFailure } from '../providers/provider-adapter';
import type { AttemptRecord } from '../usage/usage-record.entity';
import type { PlannedStep } from './chain';

/** One attempt on one of a request's planned steps (run by the executor's step loop, src/providers/step-attempts.ts). */
export type Attempt<T> = StepAttempt<T, PlannedStep>;

/**
 * One attempt's line of the usage record; a retry on the same step is marked with its number (decisions §3), and an
 * attempt on one of a provider's accounts names it (§7).
 */
export const attemptRecord = (
  step: PlannedStep,
  outcome: string,
  latency: number,
  number: number,
  account?: string,
): AttemptRecord =>
  account !== undefined
    ? { ...attemptRecord(step, outcome, latency, number), account }
    : number > 1
      ? {
          provider: step.provider,
          model: step.model,
          level: step.level,
          outcome,
          latency_ms: latency,
          attempt: number,
          retry: true,
        }
      : { provider: step.provider, model: step.model, level: step.level, outcome, latency_ms: latency };

/** What the provider said, for the message of a relayed client error. */
export const upstreamMessage = (err: UpstreamFailure): string =>
  (err.outcome.kind === 'http' || err.outcome.kind === 'provider_error' ? err.outcome.message : undefined) ??
  err.message;
