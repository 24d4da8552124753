import type { AccountPool, AccountSlot } from '../providers/account-pool';
import type { PlannedStep } from './chain';
import type { CircuitRegistry } from './circuit-registry';
import type { FailoverScope } from './failover-scope';

/** The skip of a step whose accounts stayed busy for its queue_timeout_ms: like a usage cap, not a breaker failure. */
export const NO_FREE_ACCOUNT = 'no free account slot';
export const CIRCUIT_OPEN = 'circuit open';

/**
 * The account a call on `step` uses (decisions §7), its slot taken: first a free one whose cooldown is over, as its
 * trial (the first real request is the probe, §3: otherwise a busy provider's other accounts would keep it from ever
 * healing); else by weight among those with a free slot and a closed circuit; else, while a closed one is busy, the
 * first slot given back within the step's queue_timeout_ms. A string: why the step is skipped.
 */
export async function takeAccount(
  pool: AccountPool,
  step: PlannedStep,
  scope: FailoverScope,
  circuits: CircuitRegistry,
): Promise<AccountSlot | string> {
  const closed = (circuit: string): boolean => circuits.isAvailable(circuit);
  const until = Date.now() + step.queueTimeoutMs;
  for (;;) {
    for (const slot of pool.slots) {
      if (!slot.free || closed(slot.circuit)) continue;
      // held while the claim is written, so no other call overfills it meanwhile
      slot.take();
      const admitted = circuits.admit(slot.circuit, scope.requestId);
      if (admitted === true || (admitted !== false && (await admitted))) return slot;
      slot.untake();
    }
    const taken = pool.take(closed);
    if (taken) return taken;
    if (!pool.slots.some((slot) => closed(slot.circuit))) return CIRCUIT_OPEN;
    const left = until - Date.now();
    if (left <= 0 || scope.aborted || !(await pool.waitForSlot(left, scope))) return NO_FREE_ACCOUNT;
  }
}
