import { accountCircuit, type ResolvedAccount } from '../config/accounts';
import type { ProviderAdapter } from './provider-adapter';

/**
 * One account of a provider (decisions §7): its adapter (which sends the account's key), its circuit's name, and its
 * calls in flight on this replica. Concurrency is counted per replica: with N replicas an account may have up to
 * N × max_concurrency calls in flight (docs/providers.md#accounts).
 */
export class AccountSlot {
  readonly name: string;
  /** `provider/account`: the key of its circuit (shared across replicas, like a provider's). */
  readonly circuit: string;
  readonly weight: number;
  /** Infinity when the account sets no limit. */
  readonly maxConcurrency: number;
  inFlight = 0;

  constructor(
    provider: string,
    account: ResolvedAccount,
    readonly adapter: ProviderAdapter,
    private readonly pool: AccountPool,
  ) {
    this.name = account.name;
    this.circuit = accountCircuit(provider, account.name);
    this.weight = account.weight;
    this.maxConcurrency = account.maxConcurrency ?? Infinity;
  }

  get free(): boolean {
    return this.inFlight < this.maxConcurrency;
  }

  /** Takes one of its slots (the caller checked `free`). */
  take(): this {
    this.inFlight += 1;
    return this;
  }

  /** Undoes a `take` that did not become a call (its trial was not admitted): nobody is woken. */
  untake(): void {
    this.inFlight -= 1;
  }

  /** Gives one slot back: the first call waiting for one of the provider's accounts tries again. */
  release(): void {
    this.inFlight -= 1;
    this.pool.slotFreed();
  }
}

/**
 * Picks, by weight, one of `slots` that `usable` admits; `random` in [0, 1). Two passes over the list and no array
 * made: the choice is on every call of a provider with accounts.
 */
export function chooseByWeight<T extends { weight: number }>(
  slots: readonly T[],
  usable: (slot: T) => boolean,
  random: number,
): T | null {
  let total = 0;
  for (const slot of slots) if (usable(slot)) total += slot.weight;
  if (total === 0) return null;
  let point = random * total;
  let last: T | null = null;
  for (const slot of slots) {
    if (!usable(slot)) continue;
    last = slot;
    point -= slot.weight;
    if (point < 0) return slot;
  }
  return last; // rounding at the top end
}

/** The accounts of one provider and the calls waiting for a free slot among them (in arrival order). */
export class AccountPool {
  readonly slots: AccountSlot[] = [];
  private readonly waiters: Array<() => void> = [];

  constructor(
    readonly provider: string,
    private readonly random: () => number = Math.random,
  ) {}

  add(account: ResolvedAccount, adapter: ProviderAdapter): AccountSlot {
    const slot = new AccountSlot(this.provider, account, adapter, this);
    this.slots.push(slot);
    return slot;
  }

  /** An account with a free slot whose circuit `closed` admits, chosen by weight and taken; null when none. */
  take(closed: (circuit: string) => boolean): AccountSlot | null {
    return chooseByWeight(this.slots, (s) => s.free && closed(s.circuit), this.random())?.take() ?? null;
  }

  /** Resolves true when a slot was given back within `ms` (try `take` again), false when none was. */
  waitForSlot(ms: number, signal?: { onAbort(listener: () => void): () => void }): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      let undo: (() => void) | undefined = undefined;
      const done = (freed: boolean): void => {
        clearTimeout(timer);
        undo?.();
        const at = this.waiters.indexOf(wake);
        if (at >= 0) this.waiters.splice(at, 1);
        resolve(freed);
      };
      const wake = (): void => done(true);
      const timer = setTimeout(() => done(false), ms);
      this.waiters.push(wake);
      undo = signal?.onAbort(() => done(false));
    });
  }

  /** Calls waiting for a slot (health, tests). */
  get waiting(): number {
    return this.waiters.length;
  }

  slotFreed(): void {
    this.waiters[0]?.();
  }
}
