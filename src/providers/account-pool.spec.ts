import type { ResolvedAccount } from '../config/accounts';
import { AccountPool, chooseByWeight } from './account-pool';
import type { ProviderAdapter } from './provider-adapter';

const account = (name: string, weight = 1, maxConcurrency: number | null = null): ResolvedAccount => ({
  name,
  apiKey: `key-${name}`,
  groupId: null,
  weight,
  maxConcurrency,
});
const adapter = {} as ProviderAdapter;
const all = (): boolean => true;

describe('choosing an account by weight (decisions §7)', () => {
  const slots = [
    { name: 'a', weight: 1 },
    { name: 'b', weight: 3 },
  ];

  it('splits the range [0, 1) in proportion to the weights', () => {
    expect(chooseByWeight(slots, all, 0)?.name).toBe('a');
    expect(chooseByWeight(slots, all, 0.2499)?.name).toBe('a');
    expect(chooseByWeight(slots, all, 0.25)?.name).toBe('b');
    expect(chooseByWeight(slots, all, 0.9999)?.name).toBe('b');
  });

  it('gives each account its share over many draws', () => {
    const counts = { a: 0, b: 0 };
    for (let i = 0; i < 4000; i++) counts[chooseByWeight(slots, all, i / 4000)!.name as 'a' | 'b'] += 1;
    expect(counts).toEqual({ a: 1000, b: 3000 });
  });

  it('chooses only among the usable ones, and none when none is', () => {
    expect(chooseByWeight(slots, (s) => s.name === 'a', 0.99)?.name).toBe('a');
    expect(chooseByWeight(slots, () => false, 0.5)).toBeNull();
  });
});

describe('an account pool', () => {
  it('takes an account with a free slot and a closed circuit, and never more than max_concurrency', () => {
    const pool = new AccountPool('mm', () => 0);
    pool.add(account('a', 1, 1), adapter);
    pool.add(account('b', 1, 1), adapter);
    const first = pool.take(all);
    const second = pool.take(all);
    expect([first?.name, second?.name]).toEqual(['a', 'b']);
    expect(pool.take(all)).toBeNull();
    second?.release();
    expect(pool.take(all)?.name).toBe('b');
    expect(pool.slots.map((s) => s.inFlight)).toEqual([1, 1]);
  });

  it('skips an account whose circuit is open, and names the circuit provider/account', () => {
    const pool = new AccountPool('mm', () => 0);
    pool.add(account('a'), adapter);
    pool.add(account('b'), adapter);
    expect(pool.slots.map((s) => s.circuit)).toEqual(['mm/a', 'mm/b']);
    expect(pool.take((circuit) => circuit !== 'mm/a')?.name).toBe('b');
  });

  it('wakes a waiting call when a slot is given back, and lets one time out otherwise', async () => {
    const pool = new AccountPool('mm');
    pool.add(account('a', 1, 1), adapter);
    const held = pool.take(all)!;
    const started = Date.now();
    expect(await pool.waitForSlot(60)).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(55);
    const waiting = pool.waitForSlot(5000);
    expect(pool.waiting).toBe(1);
    held.release();
    expect(await waiting).toBe(true);
    expect(pool.waiting).toBe(0);
  });

  it('ends a wait when the client leaves', async () => {
    const pool = new AccountPool('mm');
    pool.add(account('a', 1, 1), adapter);
    pool.take(all);
    let leave: () => void = () => undefined;
    const waiting = pool.waitForSlot(5000, { onAbort: (listener) => ((leave = listener), () => undefined) });
    leave();
    expect(await waiting).toBe(false);
    expect(pool.waiting).toBe(0);
  });
});
