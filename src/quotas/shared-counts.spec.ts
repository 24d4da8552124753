import { CountsTable, SharedCounts, SharedTotal } from './shared-counts';
import { CountDelta, WindowCounter, windowStart } from './window-counter';

/** The shared table in memory: what PostgreSQL's upsert does. */
class MemoryTable implements CountsTable {
  readonly rows = new Map<string, SharedTotal>();
  failNext = false;

  add(deltas: CountDelta[]): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      return Promise.reject(new Error('database away'));
    }
    for (const d of deltas) {
      const id = `${d.key}|${d.per}|${d.windowStart}`;
      const row = this.rows.get(id) ?? { key: d.key, per: d.per, windowStart: d.windowStart, count: 0 };
      row.count += d.n;
      this.rows.set(id, row);
    }
    return Promise.resolve();
  }

  totals(): Promise<SharedTotal[]> {
    return Promise.resolve([...this.rows.values()].map((r) => ({ ...r })));
  }
}

const cap = { requests: 5, per: 'minute' as const };

describe('SharedCounts (count in memory, exchange deltas with the shared table)', () => {
  it('lets each replica see the others’ counts after an exchange, so the limit holds across them', async () => {
    const table = new MemoryTable();
    const a = new SharedCounts(new WindowCounter(), table, 'a');
    const b = new SharedCounts(new WindowCounter(), table, 'b');
    const now = Date.now();
    for (let i = 0; i < 3; i++) expect(a.counter.tryConsume('k', cap, now)).toBe(true);
    await a.sync();
    await b.sync();
    expect(b.counter.count('k', 'minute', now)).toBe(3);
    expect(b.counter.tryConsume('k', cap, now)).toBe(true);
    expect(b.counter.tryConsume('k', cap, now)).toBe(true);
    expect(b.counter.tryConsume('k', cap, now)).toBe(false);
    await b.sync();
    await a.sync();
    expect(a.counter.tryConsume('k', cap, now)).toBe(false);
    expect([...table.rows.values()].map((r) => r.count)).toEqual([5]);
  });

  it('keeps the increments of a failed exchange and hands them over on the next', async () => {
    const table = new MemoryTable();
    const a = new SharedCounts(new WindowCounter(), table, 'a');
    const now = Date.now();
    a.counter.tryConsume('k', cap, now);
    a.counter.tryConsume('k', cap, now);
    table.failNext = true;
    await a.sync(); // logged, not thrown
    expect(table.rows.size).toBe(0);
    await a.sync();
    expect([...table.rows.values()]).toEqual([
      { key: 'k', per: 'minute', windowStart: windowStart('minute', now), count: 2 },
    ]);
  });

  it('ignores a total of a window that is not the current one', () => {
    const counter = new WindowCounter();
    const now = Date.now();
    counter.observeTotal('k', 'minute', now, 99, windowStart('minute', now) - 60_000);
    expect(counter.count('k', 'minute', now)).toBe(0);
    counter.observeTotal('k', 'minute', now, 4, windowStart('minute', now));
    expect(counter.count('k', 'minute', now)).toBe(4);
  });
});
