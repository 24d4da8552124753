import { RequestRateLimit } from './rate-limit';

const at = (iso: string): number => Date.parse(iso);

describe('RequestRateLimit', () => {
  const t = at('2025-03-14T15:09:10.000Z');

  it('admits the limit in a minute and refuses the next request with the seconds left in the window', () => {
    const limit = new RequestRateLimit(3);
    expect([1, 2, 3].map(() => limit.admit('pk_a', t))).toEqual([
      { allowed: true },
      { allowed: true },
      { allowed: true },
    ]);
    expect(limit.admit('pk_a', t)).toEqual({ allowed: false, retryAfterSecs: 50 });
    expect(limit.admit('pk_a', t + 49_500)).toEqual({ allowed: false, retryAfterSecs: 1 });
    expect(limit.count('pk_a', t)).toBe(3);
  });

  it('rounds Retry-After up and never answers 0', () => {
    const limit = new RequestRateLimit(1);
    limit.admit('pk_a', t);
    expect(limit.admit('pk_a', t + 200)).toEqual({ allowed: false, retryAfterSecs: 50 });
    expect(limit.admit('pk_a', at('2025-03-14T15:09:59.999Z'))).toEqual({ allowed: false, retryAfterSecs: 1 });
  });

  it('counts each key on its own', () => {
    const limit = new RequestRateLimit(1);
    expect(limit.admit('pk_a', t).allowed).toBe(true);
    expect(limit.admit('pk_b', t).allowed).toBe(true);
    expect(limit.admit('pk_a', t).allowed).toBe(false);
  });

  it('admits again in the next minute', () => {
    const limit = new RequestRateLimit(1);
    limit.admit('pk_a', t);
    expect(limit.admit('pk_a', at('2025-03-14T15:10:00.000Z')).allowed).toBe(true);
  });

  it('does not count refused requests, so a client that keeps retrying is not shut out longer', () => {
    const limit = new RequestRateLimit(2);
    for (let i = 0; i < 10; i++) limit.admit('pk_a', t);
    expect(limit.count('pk_a', t)).toBe(2);
    expect(limit.counter.drainDeltas(t)).toEqual([
      { key: 'pk_a', per: 'minute', windowStart: at('2025-03-14T15:09:00.000Z'), n: 2 },
    ]);
  });

  it('counts what other replicas admitted once their total is observed', () => {
    const limit = new RequestRateLimit(5);
    limit.admit('pk_a', t);
    limit.counter.drainDeltas(t);
    // the shared total holds this replica's drained request and three from elsewhere
    limit.counter.observeTotal('pk_a', 'minute', t, 4);
    expect(limit.admit('pk_a', t).allowed).toBe(true);
    expect(limit.admit('pk_a', t)).toEqual({ allowed: false, retryAfterSecs: 50 });
  });

  it('keeps requests admitted since the flush on top of an observed total', () => {
    const limit = new RequestRateLimit(5);
    limit.admit('pk_a', t);
    limit.counter.drainDeltas(t);
    limit.admit('pk_a', t); // after the flush, not in the total yet
    limit.counter.observeTotal('pk_a', 'minute', t, 3);
    expect(limit.count('pk_a', t)).toBe(4);
  });

  it('admits everything and holds nothing when the limit is 0', () => {
    const limit = new RequestRateLimit(0);
    for (let i = 0; i < 1000; i++) expect(limit.admit('pk_a', t).allowed).toBe(true);
    expect(limit.enabled).toBe(false);
    expect(limit.counter.drainDeltas(t)).toEqual([]);
  });
});
