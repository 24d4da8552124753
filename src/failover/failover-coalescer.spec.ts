import { FailoverCoalescer, FailoverCondition } from './failover-coalescer';

const condition = (over: Partial<FailoverCondition> = {}): FailoverCondition => ({
  keyId: 'pk_a',
  model: 'm',
  exhaustedProvider: 'p1',
  activeProvider: 'p2',
  ...over,
});
const sample = (n: number) => ({ fallbackLevel: 1, latencyMs: n, requestId: `req_${n}` });

describe('FailoverCoalescer', () => {
  it('makes the first failover of a condition an event and counts the rest of its window into one closing event', () => {
    const c = new FailoverCoalescer(60_000);
    const verdicts = Array.from({ length: 50 }, (_, i) => c.observe(condition(), sample(i), 1000 + i));

    expect(verdicts[0]).toBe('event');
    expect(verdicts.slice(1).every((v) => v === 'counted')).toBe(true);
    expect(c.counted).toBe(49);
    expect(c.due(60_999)).toEqual([]);
    expect(c.due(61_000)).toEqual([{ condition: condition(), last: sample(49), count: 49, windowSecs: 60 }]);
    expect(c.counted).toBe(0);
    expect(c.nextEnd()).toBeNull();
  });

  it('makes every failover an event with a window of 0', () => {
    const c = new FailoverCoalescer(0);
    expect(Array.from({ length: 5 }, (_, i) => c.observe(condition(), sample(i), i))).toEqual(Array(5).fill('event'));
    expect(c.closeAll()).toEqual([]);
  });

  it('gives another model, exhausted provider, serving provider or key a window of its own', () => {
    const c = new FailoverCoalescer(10_000);
    const others = [
      condition(),
      condition({ model: 'n' }),
      condition({ exhaustedProvider: 'p3' }),
      condition({ exhaustedProvider: null }),
      condition({ activeProvider: 'p4' }),
      condition({ keyId: 'pk_b' }),
    ];
    expect(others.map((o) => c.observe(o, sample(0), 0))).toEqual(Array(others.length).fill('event'));
    expect(others.map((o) => c.observe(o, sample(1), 1))).toEqual(Array(others.length).fill('counted'));
  });

  it('keeps a window open when a sibling condition (same key, model and exhausted provider) ends', () => {
    const c = new FailoverCoalescer(1000);
    const a = condition();
    const b = condition({ activeProvider: 'p4' });
    c.observe(a, sample(0), 0);
    c.observe(a, sample(1), 1);
    c.observe(b, sample(2), 500);
    expect(c.due(1000)).toEqual([{ condition: a, last: sample(1), count: 1, windowSecs: 1 }]);
    expect(c.observe(b, sample(3), 1100)).toBe('counted');
    expect(c.observe(a, sample(4), 1100)).toBe('event');
    expect(c.due(1500)).toEqual([{ condition: b, last: sample(3), count: 1, windowSecs: 1 }]);
    expect(c.observe(b, sample(5), 1600)).toBe('event');
  });

  it('sends no closing event for a window that counted nothing, and opens a new window after one ends', () => {
    const c = new FailoverCoalescer(1000);
    c.observe(condition(), sample(0), 0);
    expect(c.nextEnd()).toBe(1000);
    expect(c.due(1000)).toEqual([]);
    expect(c.observe(condition(), sample(1), 1500)).toBe('event');
    expect(c.observe(condition(), sample(2), 1600)).toBe('counted');
    expect(c.nextEnd()).toBe(2500);
  });

  it('opens a new window for a failover that arrives after the window ended but before due() ran, reporting the ended one at the next due()', () => {
    const c = new FailoverCoalescer(1000);
    c.observe(condition(), sample(0), 0);
    c.observe(condition(), sample(1), 500);
    expect(c.observe(condition(), sample(2), 1200)).toBe('event');
    expect(c.nextEnd()).toBe(0);
    expect(c.due(1200)).toEqual([{ condition: condition(), last: sample(1), count: 1, windowSecs: 1 }]);
    expect(c.nextEnd()).toBe(2200);
  });

  it('closes every open window at shutdown, losing no count', () => {
    const c = new FailoverCoalescer(60_000);
    for (let i = 0; i < 3; i++) c.observe(condition(), sample(i), i);
    c.observe(condition({ model: 'n' }), sample(9), 5);
    expect(c.closeAll()).toEqual([{ condition: condition(), last: sample(2), count: 2, windowSecs: 60 }]);
    expect(c.nextEnd()).toBeNull();
  });

  it('stops coalescing new conditions past its bound of open windows (each failover is then its own event)', () => {
    const c = new FailoverCoalescer(60_000, 2);
    c.observe(condition({ keyId: 'k1' }), sample(0), 0);
    c.observe(condition({ keyId: 'k2' }), sample(0), 0);
    expect(c.observe(condition({ keyId: 'k3' }), sample(0), 0)).toBe('event');
    expect(c.observe(condition({ keyId: 'k3' }), sample(1), 1)).toBe('event');
    expect(c.observe(condition({ keyId: 'k1' }), sample(1), 1)).toBe('counted');
  });
});
