import { RetryBuffer } from './retry-buffer';

const BACKOFF = { firstMs: 250, maxMs: 2000 };

describe('RetryBuffer', () => {
  it('hands out items in order, at most `max` at a time, and forgets written ones', () => {
    const b = new RetryBuffer<string>(10, BACKOFF);
    for (const item of ['a', 'b', 'c']) b.add(item, 0);

    const first = b.take(0, 2);
    expect(first.map((e) => e.item)).toEqual(['a', 'b']);
    expect(b.size).toBe(3);
    b.done(first);
    expect(b.size).toBe(1);
    expect(b.take(0, 10).map((e) => e.item)).toEqual(['c']);
  });

  it('retries a failed write after a backoff doubling up to its maximum, ahead of newer items', () => {
    const b = new RetryBuffer<string>(10, BACKOFF);
    b.add('a', 0);
    let now = 0;
    const waits: number[] = [];
    for (let failure = 1; failure <= 5; failure++) {
      const taken = b.take(now, 10);
      expect(taken.map((e) => e.item)).toEqual(['a']);
      b.failed(taken, now);
      const due = b.nextDue() ?? NaN;
      waits.push(due - now);
      expect(b.take(due - 1, 10)).toEqual([]);
      now = due;
    }
    expect(waits).toEqual([250, 500, 1000, 2000, 2000]);
    b.add('b', now);
    expect(b.take(now, 10).map((e) => e.item)).toEqual(['a', 'b']);
  });

  it('refuses new items past its capacity, in flight ones included, and takes them again once room is made', () => {
    const b = new RetryBuffer<number>(2, BACKOFF);
    expect(b.add(1, 0)).toBe(true);
    const inFlight = b.take(0, 1);
    expect(b.add(2, 0)).toBe(true);
    expect(b.add(3, 0)).toBe(false);
    b.done(inFlight);
    expect(b.add(3, 0)).toBe(true);
    expect(b.size).toBe(2);
  });

  it('gives every waiting item up at once on drain, whatever its backoff', () => {
    const b = new RetryBuffer<string>(10, BACKOFF);
    b.add('a', 0);
    b.failed(b.take(0, 1), 0);
    b.add('b', 0);
    expect(b.drain()).toEqual(['a', 'b']);
    expect(b.size).toBe(0);
    expect(b.nextDue()).toBeNull();
  });
});
