import { endpointBackoffSeconds, TIMEOUTS_BEFORE_BACKOFF } from './endpoint-backoff';

describe('endpointBackoffSeconds', () => {
  it('leaves an endpoint alone until it has timed out three times in a row', () => {
    expect(TIMEOUTS_BEFORE_BACKOFF).toBe(3);
    expect([0, 1, 2].map(endpointBackoffSeconds)).toEqual([null, null, null]);
  });

  it('backs off a minute, doubling with each probe that times out again, at most an hour', () => {
    expect([3, 4, 5, 6, 7, 8, 9, 50].map(endpointBackoffSeconds)).toEqual([60, 120, 240, 480, 960, 1920, 3600, 3600]);
  });
});
