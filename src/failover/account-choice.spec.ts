import { AccountPool } from '../providers/account-pool';
import type { ProviderAdapter } from '../providers/provider-adapter';
import { CIRCUIT_OPEN, NO_FREE_ACCOUNT, takeAccount } from './account-choice';
import type { PlannedStep } from './chain';
import type { CircuitRegistry } from './circuit-registry';
import type { FailoverScope } from './failover-scope';

/** Circuits by name: closed, on trial for the next request (`trial`), or open. */
function circuits(states: Record<string, 'closed' | 'trial' | 'open'>): CircuitRegistry {
  return {
    isAvailable: (circuit: string) => states[circuit] === 'closed',
    admit: (circuit: string) => states[circuit] === 'closed' || (states[circuit] === 'trial' && Promise.resolve(true)),
  } as unknown as CircuitRegistry;
}
const scope = { requestId: 'req_1', aborted: false, onAbort: () => () => undefined } as unknown as FailoverScope;
const step = (queueTimeoutMs: number) => ({ queueTimeoutMs }) as PlannedStep;

function poolOf(max: number | null): AccountPool {
  const pool = new AccountPool('mm', () => 0);
  for (const name of ['a', 'b'])
    pool.add({ name, apiKey: `key-${name}`, groupId: null, weight: 1, maxConcurrency: max }, {} as ProviderAdapter);
  return pool;
}
const nameOf = (taken: Awaited<ReturnType<typeof takeAccount>>) => (typeof taken === 'string' ? taken : taken.name);

describe('taking an account for a call (decisions §7)', () => {
  it('takes a closed account by weight and skips one whose circuit is open', async () => {
    const pool = poolOf(null);
    expect(nameOf(await takeAccount(pool, step(0), scope, circuits({ 'mm/a': 'open', 'mm/b': 'closed' })))).toBe('b');
  });

  it('gives a cooled-down account the call as its trial, before the closed ones', async () => {
    const pool = poolOf(null);
    expect(nameOf(await takeAccount(pool, step(0), scope, circuits({ 'mm/a': 'closed', 'mm/b': 'trial' })))).toBe('b');
    expect(pool.slots.map((s) => s.inFlight)).toEqual([0, 1]);
  });

  it('skips the step as circuit open when every account is open, holding no slot', async () => {
    const pool = poolOf(1);
    expect(await takeAccount(pool, step(1000), scope, circuits({ 'mm/a': 'open', 'mm/b': 'open' }))).toBe(CIRCUIT_OPEN);
    expect(pool.slots.map((s) => s.inFlight)).toEqual([0, 0]);
  });

  it('waits queue_timeout_ms for a slot, then skips the step as no free account slot', async () => {
    const pool = poolOf(1);
    const all = circuits({ 'mm/a': 'closed', 'mm/b': 'closed' });
    await takeAccount(pool, step(0), scope, all);
    await takeAccount(pool, step(0), scope, all);
    const started = Date.now();
    expect(await takeAccount(pool, step(80), scope, all)).toBe(NO_FREE_ACCOUNT);
    expect(Date.now() - started).toBeGreaterThanOrEqual(75);
    expect(pool.slots.map((s) => s.inFlight)).toEqual([1, 1]);
  });

  it('takes the slot given back while it waits', async () => {
    const pool = poolOf(1);
    const all = circuits({ 'mm/a': 'closed', 'mm/b': 'closed' });
    const first = await takeAccount(pool, step(0), scope, all);
    await takeAccount(pool, step(0), scope, all);
    const waiting = takeAccount(pool, step(5000), scope, all);
    setTimeout(() => typeof first !== 'string' && first.release(), 20);
    expect(nameOf(await waiting)).toBe('a');
    expect(pool.slots.map((s) => s.inFlight)).toEqual([1, 1]);
  });
});
