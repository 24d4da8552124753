import { servedHeaderPairs, servedHeaders } from './failover-headers';

const served = (over: Partial<Parameters<typeof servedHeaders>[0]> = {}) => ({
  provider: 'p2',
  model: 'm',
  level: 1,
  exhausted: { provider: 'p1', reason: 'circuit open' },
  attempts: 1,
  ...over,
});

describe('served headers', () => {
  it('names who served and, past a failed step, the alert', () => {
    expect(servedHeaders(served())).toEqual({
      'x-svc-provider-used': 'p2',
      'x-svc-is-fallback': 'true',
      'x-svc-fallback-level': '1',
      'x-svc-attempts': '1',
      'x-svc-fallback-alert': JSON.stringify({
        message: 'p1 failed (circuit open); served by p2 at level 1',
        exhausted_provider: 'p1',
        active_provider: 'p2',
        fallback_level: 1,
      }),
    });
    expect(servedHeaders(served({ level: 0, provider: 'p1', exhausted: null, attempts: 2 }))).toEqual({
      'x-svc-provider-used': 'p1',
      'x-svc-is-fallback': 'false',
      'x-svc-fallback-level': '0',
      'x-svc-attempts': '2',
    });
  });

  it('builds each distinct set once and shares it, frozen', () => {
    const first = servedHeaderPairs(served());
    expect(servedHeaderPairs(served())).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first[0])).toBe(true);
  });

  it('tells apart every field that changes the headers', () => {
    const sets = [
      servedHeaderPairs(served()),
      servedHeaderPairs(served({ provider: 'p3' })),
      servedHeaderPairs(served({ level: 2 })),
      servedHeaderPairs(served({ exhausted: { provider: 'p0', reason: 'circuit open' } })),
      servedHeaderPairs(served({ exhausted: { provider: 'p1', reason: 'timeout' } })),
      servedHeaderPairs(served(), 'voice substituted'),
      servedHeaderPairs(served({ exhausted: null })),
    ];
    const alerts = sets.map((pairs) => JSON.stringify(pairs));
    expect(new Set(alerts).size).toBe(sets.length);
    expect(Object.fromEntries(sets[5])['x-svc-fallback-alert']).toContain('; voice substituted');
  });

  it('keeps a bounded number of sets: past the bound it starts over, and every answer stays right', () => {
    const first = servedHeaderPairs(served());
    for (let i = 0; i < 1100; i++) {
      const pairs = servedHeaderPairs(served({ exhausted: { provider: 'p1', reason: `reason ${i}` } }));
      expect(JSON.parse(Object.fromEntries(pairs)['x-svc-fallback-alert']).message).toBe(
        `p1 failed (reason ${i}); served by p2 at level 1`,
      );
    }
    const again = servedHeaderPairs(served());
    expect(again).not.toBe(first);
    expect(again).toEqual(first);
    expect(servedHeaderPairs(served())).toBe(again);
  });

  it('gives servedHeaders callers an object of their own to add to', () => {
    const headers = servedHeaders(served());
    headers['Retry-After'] = '1';
    expect(servedHeaders(served())).not.toHaveProperty('Retry-After');
  });
});
