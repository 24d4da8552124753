import { attemptsAllowed, parseRetrySchedule, waitAfterAttempt } from './retry-schedule';

describe('retry schedule', () => {
  it('reads the default schedule as 7 waits, so 8 attempts', () => {
    const schedule = parseRetrySchedule('30s,2m,10m,30m,1h,3h,6h');
    expect(schedule).toEqual([30, 120, 600, 1800, 3600, 10800, 21600]);
    expect(attemptsAllowed(schedule)).toBe(8);
  });

  it('takes bare seconds, spaces and days', () => {
    expect(parseRetrySchedule(' 5, 1d ,0s')).toEqual([5, 86400, 0]);
  });

  it('means one attempt when empty', () => {
    expect(parseRetrySchedule('')).toEqual([]);
    expect(waitAfterAttempt([], 1)).toBeNull();
  });

  it('refuses anything that is not a wait', () => {
    expect(() => parseRetrySchedule('30s,soon')).toThrow(/'soon' is not a wait/);
    expect(() => parseRetrySchedule('1.5s')).toThrow();
    expect(() => parseRetrySchedule('30s,,2m')).toThrow();
  });

  it('gives the wait after each failed attempt, and none after the last', () => {
    const schedule = [1, 2];
    expect(waitAfterAttempt(schedule, 1)).toBe(1);
    expect(waitAfterAttempt(schedule, 2)).toBe(2);
    expect(waitAfterAttempt(schedule, 3)).toBeNull();
  });
});
