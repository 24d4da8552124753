import { secondsLeftInWindow, stepQuotaKey, Quota, WindowCounter, windowMs, windowStart } from './window-counter';

const at = (iso: string): number => Date.parse(iso);
const perMinute = (requests: number): Quota => ({ requests, per: 'minute' });

describe('windowStart', () => {
  it('aligns minute, hour and day windows to UTC', () => {
    const now = at('2025-03-14T15:09:26.535Z');
    expect(windowStart('minute', now)).toBe(at('2025-03-14T15:09:00.000Z'));
    expect(windowStart('hour', now)).toBe(at('2025-03-14T15:00:00.000Z'));
    expect(windowStart('day', now)).toBe(at('2025-03-14T00:00:00.000Z'));
  });

  it('puts a boundary instant in the window it starts', () => {
    expect(windowStart('minute', at('2025-03-14T15:10:00.000Z'))).toBe(at('2025-03-14T15:10:00.000Z'));
    expect(windowStart('minute', at('2025-03-14T15:09:59.999Z'))).toBe(at('2025-03-14T15:09:00.000Z'));
    expect(windowStart('day', at('2025-03-15T00:00:00.000Z'))).toBe(at('2025-03-15T00:00:00.000Z'));
  });
});

describe('windowMs', () => {
  it('gives the length of each window', () => {
    expect(windowMs('minute')).toBe(60_000);
    expect(windowMs('hour')).toBe(3_600_000);
    expect(windowMs('day')).toBe(86_400_000);
  });
});

describe('secondsLeftInWindow', () => {
  it('counts whole seconds to the end of the UTC window, rounding up, never 0', () => {
    const minute = Date.UTC(2026, 10, 21, 12, 30, 0);
    expect(secondsLeftInWindow('minute', minute)).toBe(60);
    expect(secondsLeftInWindow('minute', minute + 59_001)).toBe(1);
    expect(secondsLeftInWindow('minute', minute + 59_999)).toBe(1);
    expect(secondsLeftInWindow('minute', minute + 20_500)).toBe(40);
    expect(secondsLeftInWindow('hour', Date.UTC(2026, 10, 21, 12, 59, 0))).toBe(60);
    expect(secondsLeftInWindow('day', Date.UTC(2026, 10, 21, 23, 0, 0))).toBe(3600);
  });
});

describe('stepQuotaKey', () => {
  it('keeps different chain positions of one key apart', () => {
    expect(stepQuotaKey('pk_a', 0)).not.toBe(stepQuotaKey('pk_a', 1));
    expect(stepQuotaKey('pk_a', 1)).not.toBe(stepQuotaKey('pk_b', 1));
  });
});

describe('WindowCounter', () => {
  const t = at('2025-03-14T15:09:10.000Z');

  it('allows requests up to the cap and refuses the next one', () => {
    const counter = new WindowCounter();
    expect([1, 2, 3].map(() => counter.tryConsume('k', perMinute(3), t))).toEqual([true, true, true]);
    expect(counter.tryConsume('k', perMinute(3), t)).toBe(false);
    expect(counter.count('k', 'minute', t)).toBe(3);
  });

  it('does not count a refused request', () => {
    const counter = new WindowCounter();
    counter.tryConsume('k', perMinute(1), t);
    counter.tryConsume('k', perMinute(1), t);
    counter.tryConsume('k', perMinute(1), t);
    expect(counter.count('k', 'minute', t)).toBe(1);
    expect(counter.drainDeltas(t)).toEqual([{ key: 'k', per: 'minute', windowStart: windowStart('minute', t), n: 1 }]);
  });

  it('starts afresh in the next window', () => {
    const counter = new WindowCounter();
    counter.tryConsume('k', perMinute(1), t);
    expect(counter.tryConsume('k', perMinute(1), t + 49_999)).toBe(false);
    expect(counter.tryConsume('k', perMinute(1), t + 50_000)).toBe(true);
  });

  it('counts each key separately', () => {
    const counter = new WindowCounter();
    expect(counter.tryConsume(stepQuotaKey('pk_a', 0), perMinute(1), t)).toBe(true);
    expect(counter.tryConsume(stepQuotaKey('pk_a', 1), perMinute(1), t)).toBe(true);
    expect(counter.tryConsume(stepQuotaKey('pk_b', 0), perMinute(1), t)).toBe(true);
    expect(counter.tryConsume(stepQuotaKey('pk_a', 0), perMinute(1), t)).toBe(false);
  });

  it('counts separately when a step changes its cap period', () => {
    const counter = new WindowCounter();
    counter.tryConsume('k', perMinute(1), t);
    expect(counter.tryConsume('k', { requests: 1, per: 'hour' }, t)).toBe(true);
  });

  it('refuses once requests learnt from other replicas fill the cap', () => {
    const counter = new WindowCounter();
    counter.tryConsume('k', perMinute(5), t);
    counter.add('k', 'minute', t, 4);
    expect(counter.tryConsume('k', perMinute(5), t)).toBe(false);
  });

  it('does not drain requests learnt from other replicas again', () => {
    const counter = new WindowCounter();
    counter.tryConsume('k', perMinute(5), t);
    counter.add('k', 'minute', t, 3);
    expect(counter.drainDeltas(t).map((d) => d.n)).toEqual([1]);
    expect(counter.count('k', 'minute', t)).toBe(4);
  });

  it('ignores a zero, negative or non-numeric addition', () => {
    const counter = new WindowCounter();
    counter.add('k', 'minute', t, 0);
    counter.add('k', 'minute', t, -2);
    counter.add('k', 'minute', t, Number.NaN);
    expect(counter.count('k', 'minute', t)).toBe(0);
  });

  it('drains the increments since the last drain, then nothing', () => {
    const counter = new WindowCounter();
    counter.tryConsume('a', perMinute(10), t);
    counter.tryConsume('a', perMinute(10), t);
    counter.tryConsume('b', { requests: 10, per: 'day' }, t);
    const deltas = counter.drainDeltas(t);
    expect(deltas).toHaveLength(2);
    expect(deltas).toEqual(
      expect.arrayContaining([
        { key: 'a', per: 'minute', windowStart: windowStart('minute', t), n: 2 },
        { key: 'b', per: 'day', windowStart: windowStart('day', t), n: 1 },
      ]),
    );
    expect(counter.drainDeltas(t)).toEqual([]);
    counter.tryConsume('a', perMinute(10), t);
    expect(counter.drainDeltas(t)).toEqual([{ key: 'a', per: 'minute', windowStart: windowStart('minute', t), n: 1 }]);
    expect(counter.count('a', 'minute', t)).toBe(3);
  });

  it('drains the last increments of a window that just ended, oldest window first', () => {
    const counter = new WindowCounter();
    counter.tryConsume('k', perMinute(10), t);
    counter.tryConsume('k', perMinute(10), t + 60_000);
    expect(counter.drainDeltas(t + 60_000).map((d) => d.windowStart)).toEqual([
      windowStart('minute', t),
      windowStart('minute', t + 60_000),
    ]);
  });

  it('prunes ended windows once drained', () => {
    const counter = new WindowCounter();
    counter.tryConsume('k', perMinute(10), t);
    counter.drainDeltas(t);
    counter.tryConsume('other', perMinute(10), t + 60_000);
    expect(counter.size).toBe(1);
  });

  it('keeps an undrained ended window for one more window, then drops it', () => {
    const counter = new WindowCounter();
    const w = windowStart('minute', t);
    counter.tryConsume('k', perMinute(10), w);
    counter.tryConsume('other', perMinute(10), w + 118_000);
    expect(counter.size).toBe(2);
    counter.tryConsume('other', perMinute(10), w + 120_000);
    expect(counter.size).toBe(2);
    expect(counter.drainDeltas(w + 120_000).map((d) => d.key)).toEqual(['other', 'other']);
  });

  it('raises the count to a shared total without counting its own drained requests twice', () => {
    const counter = new WindowCounter();
    counter.tryConsume('k', perMinute(10), t);
    counter.tryConsume('k', perMinute(10), t);
    counter.drainDeltas(t);
    counter.tryConsume('k', perMinute(10), t + 1);
    // the shared table holds our 2 drained requests plus 5 from other replicas
    counter.observeTotal('k', 'minute', t + 2, 7);
    expect(counter.count('k', 'minute', t)).toBe(8);
    counter.observeTotal('k', 'minute', t + 3, 4);
    expect(counter.count('k', 'minute', t)).toBe(8);
    expect(counter.drainDeltas(t + 4).map((d) => d.n)).toEqual([1]);
  });

  it('refuses at once when the shared total already reached the cap', () => {
    const counter = new WindowCounter();
    counter.observeTotal('k', 'minute', t, 3);
    expect(counter.tryConsume('k', perMinute(3), t)).toBe(false);
  });
});
