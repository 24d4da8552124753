import type { AccountSlot } from '../providers/account-pool';
import type { UpstreamFailure } from '../providers/provider-adapter';
import { retryAfterOf } from '../providers/attempt-policy';
import type { StepListener } from '../providers/step-attempts';
import type { AttemptTrace } from '../tracing/request-trace';
import type { PlannedStep } from './chain';
import type { FailedAttempt, StepFailure } from './failover-errors';
import type { FailoverScope } from './failover-scope';
import type { FailoverService } from './failover.service';

/**
 * One request's walk of its chain as the executor's step loop reports it (src/providers/step-attempts.ts): the
 * running step, the attempts so far and what failed, and the failover core's verdict on each attempt. One per
 * request, so a step costs no objects of its own; it is also the FailedAttempt that `failed` reads.
 */
export class ChainWalk<T> implements StepListener<T>, FailedAttempt {
  readonly failures: StepFailure[] = [];
  /** Upstream attempts sent, retries included (`x-svc-attempts`). */
  attempted = 0;
  /** The smallest Retry-After an upstream gave, for the final error (decisions §3). */
  retryAfterMs: number | undefined = undefined;
  step!: PlannedStep;
  number = 0;
  started = 0;
  traced: AttemptTrace | undefined = undefined;
  circuit = '';
  accountName: string | undefined = undefined;
  private kind = '';
  /** The account slot the step holds until it serves (the scope then holds it) or fails. */
  private account: AccountSlot | null = null;

  constructor(
    private readonly core: FailoverService,
    readonly scope: FailoverScope,
    readonly planned: PlannedStep[],
  ) {}

  enter(step: PlannedStep, kind: string, account: AccountSlot | null): void {
    this.step = step;
    this.kind = kind;
    this.account = account;
    this.circuit = account ? account.circuit : step.provider;
    this.accountName = account ? account.name : undefined;
  }

  leave(): void {
    this.account?.release();
    this.account = null;
  }

  attempting(number: number): void {
    this.number = number;
    this.attempted += 1;
    this.started = Date.now();
    // tracing hook: the attempt's CLIENT span (its retry number, and whether it continues a broken stream)
    this.traced = this.scope.trace?.startAttempt(
      this.step,
      this.kind,
      this.attempted,
      number - 1,
      this.scope.midStream,
    );
  }

  served(value: T, number: number): Promise<void> | null {
    const { scope, step } = this;
    // the account's slot is held until the call ends (or its stream breaks)
    if (this.account) [scope.account, this.account] = [this.account, null];
    const latency = Date.now() - this.started;
    const announced = this.core.served(
      scope,
      step,
      this.failures,
      this.attempted,
      number,
      latency,
      this.circuit,
      this.accountName,
    );
    if (this.traced) scope.trace?.servedBy(this.traced, value); // tracing hook
    return announced;
  }

  failed(err: unknown): { failure: UpstreamFailure; reason: string } {
    const failed = this.core.failed(this, err);
    const said = retryAfterOf(failed.failure.outcome);
    if (said !== undefined) this.retryAfterMs = Math.min(this.retryAfterMs ?? said, said);
    return failed;
  }

  again(waitMs: number | null, reason: string): boolean {
    // a retry only while the circuit still lets the provider be tried (and, the executor sees, someone waits for it)
    const again = waitMs !== null && this.core.circuitAvailable(this.circuit);
    this.core.attemptFailedNote(this.scope, this.step, reason, again ? waitMs : null);
    return again;
  }
}
