import { parseRetryAfter } from './upstream-errors';
import type { UpstreamOutcome } from './provider-adapter';
import { RETRY_JITTER_MS, retryAfterHeader, retryWait } from './attempt-policy';

const rule = { retries: 1, retryAfterMaxMs: 5000 };
const first = { number: 1, afterHeaders: false };
const wait = (outcome: UpstreamOutcome, attempt = first, random = () => 0.5): number | null =>
  retryWait(outcome, attempt, rule, random);

describe('retryWait (decisions §3: attempts on a step)', () => {
  it.each([500, 502, 503, 504])('retries an HTTP %i after a random 100-500 ms', (status) => {
    expect(wait({ kind: 'http', status }, first, () => 0)).toBe(RETRY_JITTER_MS.min);
    expect(wait({ kind: 'http', status }, first, () => 1)).toBe(RETRY_JITTER_MS.max);
  });

  it.each(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'UND_ERR_SOCKET'])(
    'retries a connection fault %s before any response',
    (code) => {
      expect(wait({ kind: 'connection', code })).toBe(300);
      expect(wait({ kind: 'connection', code }, { number: 1, afterHeaders: true })).toBeNull();
    },
  );

  it('waits a 429 or 5xx for its Retry-After when within retry_after_max_ms', () => {
    expect(wait({ kind: 'http', status: 429, retryAfterMs: 2000 })).toBe(2000);
    expect(wait({ kind: 'http', status: 503, retryAfterMs: 5000 })).toBe(5000);
  });

  it('never retries a 429 without or with a longer Retry-After, nor a 5xx asking for longer', () => {
    expect(wait({ kind: 'http', status: 429 })).toBeNull();
    expect(wait({ kind: 'http', status: 429, retryAfterMs: 5001 })).toBeNull();
    expect(wait({ kind: 'http', status: 503, retryAfterMs: 60000 })).toBeNull();
  });

  it.each<UpstreamOutcome>([
    { kind: 'timeout' },
    { kind: 'timeout', phase: 'first_token' },
    { kind: 'http', status: 401 },
    { kind: 'http', status: 402 },
    { kind: 'http', status: 403 },
    { kind: 'http', status: 400 },
    { kind: 'http', status: 404 },
    { kind: 'http', status: 408 },
    { kind: 'connection', code: 'STREAM_IDLE' },
    { kind: 'connection', code: 'ENOTFOUND' },
    { kind: 'connection' },
    { kind: 'provider_error', code: 1002 },
  ])('never retries %j on the same step', (outcome) => {
    expect(wait(outcome)).toBeNull();
  });

  it('stops once the step has had its retries', () => {
    expect(wait({ kind: 'http', status: 500 }, { number: 2, afterHeaders: false })).toBeNull();
    expect(
      retryWait({ kind: 'http', status: 500 }, { number: 2, afterHeaders: false }, { ...rule, retries: 2 }),
    ).not.toBeNull();
    expect(retryWait({ kind: 'http', status: 500 }, first, { ...rule, retries: 0 })).toBeNull();
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-12-01T12:00:00Z');
  it('reads delay-seconds and HTTP dates, in ms from now', () => {
    expect(parseRetryAfter('2', now)).toBe(2000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Tue, 01 Dec 2026 12:00:03 GMT', now)).toBe(3000);
    expect(parseRetryAfter('Tue, 01 Dec 2026 11:00:00 GMT', now)).toBe(0);
  });

  it('is undefined when absent, unreadable or past a day', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-1', now)).toBeUndefined();
    expect(parseRetryAfter('1.5', now)).toBeUndefined();
    expect(parseRetryAfter('100000', now)).toBeUndefined();
  });

  it('gives the final error whole seconds, at least 1', () => {
    expect(retryAfterHeader(1500)).toBe('2');
    expect(retryAfterHeader(0)).toBe('1');
    expect(retryAfterHeader(3000)).toBe('3');
  });
});
