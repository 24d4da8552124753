import { Injectable, Logger } from '@nestjs/common';
import { Counter } from 'prom-client';
import { DomainError } from '../common/errors/domain-error';
import { GatewayConfig } from '../config/gateway-config';
import { requestFields } from '../config/logging';
import type { Capability } from '../config/provider-kinds';
import type { AuthenticatedKey } from '../keys/key-directory';
import { MetricsService } from '../metrics/metrics.service';
import { UsageWriter } from '../usage/usage.writer';
import { AdapterRegistry } from '../providers/adapter-registry';
import { classify, PlannedStep, planRoute, type StepMisfit } from './chain';
import type { UpstreamFailure } from '../providers/provider-adapter';
import { CircuitRegistry } from './circuit-registry';
import { EventsService } from './events.service';
import { exhaustedError, modelNotSupported, relayedError, servedBy } from './failover-errors';
import type { FailedAttempt, StepFailure } from './failover-errors';
import { FailoverScope, usageOf } from './failover-scope';
import { StepQuotas } from '../quotas/step-quotas.service';
import { secondsLeftInWindow } from '../quotas/window-counter';
import { CIRCUIT_OPEN, NO_FREE_ACCOUNT, takeAccount } from './account-choice';
import type { AccountSlot } from '../providers/account-pool';
import { type Attempt, attemptRecord, upstreamMessage } from './attempt-records';
import { NEXT_STEP, runStep, toFailure } from '../providers/step-attempts';
import { ChainWalk } from './chain-walk';
import { unconfiguredNote } from './unconfigured-steps';

/**
 * The failover core, the same for chat, speech, async speech and the speech stream: walk the
 * key's chain from the entry step of the requested model, skip open circuits and capped steps,
 * fail over on what decisions §3 says, stop on the client's own errors, and report who served.
 */
@Injectable()
export class FailoverService {
  private readonly logger = new Logger(FailoverService.name);
  private readonly misconfigured: Counter<'provider' | 'reason'>;

  constructor(
    private readonly gateway: GatewayConfig,
    private readonly adapters: AdapterRegistry,
    private readonly circuits: CircuitRegistry,
    private readonly caps: StepQuotas,
    private readonly events: EventsService,
    private readonly usage: UsageWriter,
    private readonly metrics: MetricsService,
  ) {
    this.misconfigured = new Counter({
      name: 'svc_step_misconfigured_total',
      help: 'Upstream refusals that named the chain step, not the request, by provider and reason: context_length (the prompt is longer than the step model takes), model_not_found (the step model does not exist or was retired). Each went to the next step.',
      labelNames: ['provider', 'reason'],
      registers: [metrics.registry],
    });
  }

  /** A scope for one request; its usage record is written (in a batch) when it finishes. */
  openScope(requestId: string, key: AuthenticatedKey, capability: Capability): FailoverScope {
    return new FailoverScope(requestId, key, capability, (scope, result) => {
      this.circuits.requestEnded(scope.requestId);
      // the serving account's slot is held to the end of the call (a stream's last chunk included)
      const account = scope.account;
      scope.account = null;
      account?.release();
      this.usage.add(usageOf(scope, result));
    });
  }

  /** The steps a request for `model` would walk; 400 model_not_supported when no step serves it. */
  plan(key: AuthenticatedKey, model: string, capability: Capability): PlannedStep[] {
    const planned = planRoute(key.chain, model, capability, (name) => this.gateway.provider(name));
    if (!planned) throw modelNotSupported(this.gateway, key, model, capability);
    return planned;
  }

  /** The step a request would try first now: the first whose circuit is not open (what a stream announces before its first call). */
  firstAvailable(planned: PlannedStep[]): PlannedStep {
    return (
      planned.find((step) => this.adapters.get(step.provider) && this.circuits.isAvailable(step.provider)) ?? planned[0]
    );
  }

  async execute<T>(
    scope: FailoverScope,
    model: string,
    attempt: Attempt<T>,
    planned = this.plan(scope.key, model, scope.capability),
  ): Promise<T> {
    scope.requestedModel = model;
    const walk = new ChainWalk<T>(this, scope, planned);
    /** The steps skipped, for the Retry-After of a 503 when no step was tried (worked out only then). */
    let skipped: Array<{ step: PlannedStep; skip: string | null }> | null = null;
    for (const step of planned) {
      const pool = this.adapters.pool(step.provider);
      // a provider with accounts: the chosen account's slot, adapter and circuit (decisions §7)
      let account: AccountSlot | null = null;
      let adapter = this.adapters.get(step.provider);
      // a closed circuit admits at once: the await (a microtask) only for a half-open trial's claim
      let admitted = !adapter || pool !== undefined || this.circuits.admit(step.provider, scope.requestId);
      if (typeof admitted !== 'boolean') admitted = await admitted;
      let skip = !adapter ? 'no adapter' : admitted ? null : CIRCUIT_OPEN;
      if (!skip && pool) {
        const taken = await takeAccount(pool, step, scope, this.circuits);
        if (typeof taken === 'string') skip = taken;
        else [account, adapter] = [taken, taken.adapter];
      }
      if (!skip && step.step.usage_cap && !this.caps.tryConsume(scope.key.id, step.chainIndex, step.step.usage_cap)) {
        skip = 'usage cap reached';
        account?.release();
      }
      if (skip || !adapter) {
        (skipped ??= []).push({ step, skip });
        scope.attempts.push({
          provider: step.provider,
          model: step.model,
          level: step.level,
          outcome: `skipped: ${skip}`,
          latency_ms: null,
        });
        scope.trace?.stepSkipped(step, skip ?? 'skipped'); // tracing hook
        walk.failures.push({ provider: step.provider, reason: skip ?? 'skipped', level: step.level });
        continue;
      }
      walk.enter(step, adapter.kind, account);
      // the step's attempts, deadlines and retries are the executor's (src/providers/step-attempts.ts)
      try {
        const value = await runStep(scope, adapter, step, attempt, walk);
        if (value !== NEXT_STEP) return value;
      } finally {
        // the step failed (or threw): its account's slot is free for the next call
        walk.leave();
      }
    }
    // the steps this request would have tried but for their provider not being configured: fallbacks, and earlier entries of the model
    const entryIndex = planned[0]?.chainIndex ?? 0;
    const why = unconfiguredNote(
      this.gateway,
      scope.key,
      scope.capability,
      (step) => step.chainIndex > entryIndex || step.model === model,
    );
    // when the soonest skipped step is served again (whole seconds)
    throw exhaustedError(walk.failures, walk.attempted, why, walk.retryAfterMs, () =>
      Math.min(...(skipped ?? []).map(({ step, skip }) => this.secondsUntilServed(step, skip))),
    );
  }

  /**
   * A step served: its record, the breaker's success, who served, and the failover event when it was one (its store,
   * to be awaited; null, and no microtask, when there is none).
   */
  served(
    scope: FailoverScope,
    step: PlannedStep,
    failures: StepFailure[],
    attempted: number,
    number: number,
    latency: number,
    circuit: string,
    account: string | undefined,
  ): Promise<void> | null {
    // a retry that served: the step's own earlier failure is no failover (the last failure is that step's)
    if (number > 1) failures.pop();
    scope.attempts.push(attemptRecord(step, 'ok', latency, number, account));
    this.metrics.upstreamAttempt(step.provider, true, latency);
    this.circuits.recordSuccess(circuit, scope.requestId);
    scope.served = servedBy(step, failures, attempted);
    const exhausted = scope.served.exhausted;
    // a failover is this call moving past a step that failed or was skipped; a pinned fallback step
    // (the later sentences of a speech stream) serves at its level without failing over again
    if (step.level > 0 && exhausted) {
      this.metrics.failover(exhausted.provider, step.provider);
      // only the first of a coalescing window is waited for (a counted one returns nothing to await)
      return scope.announceFailover(step.provider) ? this.storeFailoverEvent(scope, latency) : null;
    }
    return null;
  }

  /**
   * A failed attempt: recorded, held against the breaker as §11 says, and either thrown on (the client left, the
   * gateway's own verdict, the client's error) or returned for the loop to retry the step or move past it.
   */
  failed(attempt: FailedAttempt, err: unknown): { failure: UpstreamFailure; reason: string } {
    const { scope, planned, step, failures, attempted, number, started, traced, circuit, accountName } = attempt;
    const latency = Date.now() - started;
    // the client left: not the provider's fault, and nobody is waiting for another step
    if (scope.aborted) {
      scope.attempts.push(attemptRecord(step, 'client disconnected', latency, number, accountName));
      if (traced) scope.trace?.attemptFailed(traced, 'cancelled'); // tracing hook
      throw err;
    }
    // the gateway's own verdict on the request (e.g. audio_too_long), not the provider's fault: no other step would do better
    if (err instanceof DomainError) {
      scope.attempts.push(attemptRecord(step, err.code, latency, number, accountName));
      if (traced) scope.trace?.attemptFailed(traced, err.code); // tracing hook
      throw err;
    }
    const failure = toFailure(err, scope.requestId);
    const verdict = classify(failure.outcome, step.providerTimeoutMs, step.providerFirstTokenTimeoutMs);
    scope.attempts.push(attemptRecord(step, verdict.reason, latency, number, accountName));
    if (traced) scope.trace?.attemptFailed(traced, failure.outcome); // tracing hook
    this.metrics.upstreamAttempt(step.provider, false, latency);
    if (verdict.verdict === 'misconfigured_step' && verdict.misfit) {
      this.stepMisconfigured(scope, step, verdict.misfit, failure);
      // the last step has no other to try: its refusal is the answer, like every other refusal
      if (step === planned[planned.length - 1]) throw relayedError(scope, step, failures, failure, attempted);
    }
    if (verdict.verdict === 'client_error') throw relayedError(scope, step, failures, failure, attempted);
    if (verdict.breakerFailure) this.circuits.recordFailure(circuit, scope.requestId);
    // a step is in the alert once, with its last attempt's reason
    const last = failures[failures.length - 1];
    if (last && number > 1 && last.provider === step.provider && last.level === step.level) failures.pop();
    failures.push({ provider: step.provider, reason: verdict.reason, level: step.level });
    return { failure, reason: verdict.reason };
  }

  /** Whether `circuit` still lets its provider be tried (a retry asks before it waits). */
  circuitAvailable(circuit: string): boolean {
    return this.circuits.isAvailable(circuit);
  }

  /** The log line of a failed attempt: what comes next. */
  attemptFailedNote(scope: FailoverScope, step: PlannedStep, reason: string, retryInMs: number | null): void {
    this.logger.warn(
      requestFields(scope.requestId),
      `${step.provider} failed for ${scope.requestId} (${reason}); ${retryInMs !== null ? `trying it again in ${retryInMs} ms` : 'trying the next step'}`,
    );
  }

  /** A step whose refusal names the step itself: the operator's to fix, so a warning and a count. */
  private stepMisconfigured(
    scope: FailoverScope,
    step: PlannedStep,
    misfit: StepMisfit,
    failure: UpstreamFailure,
  ): void {
    this.misconfigured.inc({ provider: step.provider, reason: misfit });
    const what =
      misfit === 'context_length'
        ? `the prompt is longer than its model '${step.model}' takes`
        : `its model '${step.model}' does not exist at the provider`;
    this.logger.warn(
      { ...requestFields(scope.requestId), provider: step.provider, model: step.model, reason: misfit },
      `chain step ${step.chainIndex} (${step.provider}, model '${step.model}') looks misconfigured for ${scope.requestId}: ${what} (${upstreamMessage(failure)})`,
    );
  }

  /** A skipped step's wait: the rest of its circuit's cooldown (1 s while its probe runs), or of its cap's window. */
  private secondsUntilServed(step: PlannedStep, skip: string | null): number {
    if (skip === NO_FREE_ACCOUNT) return 1;
    if (skip === CIRCUIT_OPEN) return Math.max(1, this.circuits.view(step.provider).cooldown_remaining_secs);
    if (skip === 'usage cap reached' && step.step.usage_cap)
      return secondsLeftInWindow(step.step.usage_cap.per, Date.now());
    return Infinity;
  }

  /** A stream that broke after its first byte: the provider failed (breaker), the client gets an error event. */
  streamFailed(scope: FailoverScope, err: unknown): string {
    if (err instanceof DomainError) return err.code;
    const failure = toFailure(err, scope.requestId);
    const verdict = classify(failure.outcome);
    const provider = scope.served?.provider;
    // the account that served it: its circuit learns the break, its slot is free for the continuing call
    const account = scope.account;
    scope.account = null;
    account?.release();
    if (provider && verdict.breakerFailure) this.circuits.recordFailure(account?.circuit ?? provider, scope.requestId);
    scope.attempts.push({
      provider: provider ?? '',
      model: scope.served?.model ?? '',
      level: scope.served?.level ?? 0,
      outcome: `stream broke: ${verdict.reason}`,
      latency_ms: Date.now() - scope.startedAt,
      ...(account && { account: account.name }),
    });
    scope.trace?.streamBroke(failure.outcome); // tracing hook
    return verdict.reason;
  }

  /**
   * Walks `planned` (the later steps that can continue it) for a stream whose `broken` step failed after its first
   * byte (decisions §3), as `execute` walks a chain: skips, breaker, attempts in the usage record. The served step's
   * failover event says `mid_stream`; when the first step tried serves, the broken one is its exhausted provider.
   */
  async continueStream<T>(
    scope: FailoverScope,
    broken: { provider: string; reason: string },
    attempt: Attempt<T>,
    planned: PlannedStep[],
  ): Promise<T> {
    const started = Date.now();
    scope.midStream = true;
    try {
      const value = await this.execute(scope, scope.requestedModel, attempt, planned);
      const served = scope.served;
      // execute announced the failover itself when an earlier continuing step failed before this one served
      if (served && !served.exhausted) {
        served.exhausted = broken;
        this.metrics.failover(broken.provider, served.provider);
        const stored = scope.announceFailover(served.provider)
          ? this.storeFailoverEvent(scope, Date.now() - started)
          : null;
        if (stored) await stored;
      }
      return value;
    } finally {
      scope.midStream = false;
    }
  }

  /** Resolves once the event is stored or after the bound of decisions §8 (it is then kept and retried); never rejects; null when there is nothing to wait for. */
  private storeFailoverEvent(scope: FailoverScope, latencyMs: number): Promise<void> | null {
    const served = scope.served;
    if (!served) return null;
    return this.events.recordFailover({
      keyId: scope.key.id,
      model: scope.requestedModel,
      exhaustedProvider: served.exhausted?.provider ?? null,
      activeProvider: served.provider,
      fallbackLevel: served.level,
      latencyMs,
      requestId: scope.requestId,
      // tracing hook: the event's deliveries link to this request's span
      ...(scope.trace && { traceparent: scope.trace.traceparent }),
      ...(scope.midStream && { midStream: true }),
    });
  }
}
