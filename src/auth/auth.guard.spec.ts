import { DomainError } from '../common/errors/domain-error';
import type { AuthenticatedKey, KeyDirectory } from '../keys/key-directory';
import type { RateLimiter } from '../quotas/rate-limiter.service';
import { admitKnownProxyKey, authenticateProxyKey } from './auth.guard';

const KEY: AuthenticatedKey = { id: 'pk_known', name: 'known', chain: [] };
const SECRET = 'sk-svc-known';

/** A directory holding one key in memory; `authenticate` also finds `late` (a key made on another replica). */
function directory(late?: AuthenticatedKey): KeyDirectory {
  return {
    known: (secret: string) => (secret === SECRET ? KEY : undefined),
    authenticate: (secret: string) => Promise.resolve(secret === SECRET ? KEY : secret === 'sk-svc-late' ? late : null),
  } as unknown as KeyDirectory;
}

/** A rate limiter that counts what it admits and refuses past `limit`. */
function limiter(limit = Infinity): RateLimiter & { admitted: string[] } {
  const admitted: string[] = [];
  return {
    admitted,
    admit(keyId: string) {
      if (admitted.length >= limit) throw new DomainError('rate_limited', 'Rate limit reached.');
      admitted.push(keyId);
    },
  } as unknown as RateLimiter & { admitted: string[] };
}

const code = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    return (err as DomainError).code;
  }
  return undefined;
};

describe('admitKnownProxyKey (the chat fast path, without a promise)', () => {
  it('admits a key this replica holds, counted by the rate limiter', () => {
    const rates = limiter();
    expect(admitKnownProxyKey(directory(), rates, `Bearer ${SECRET}`)).toBe(KEY);
    expect(rates.admitted).toEqual(['pk_known']);
  });

  it('leaves a secret it does not hold to the directory, uncounted', async () => {
    const rates = limiter();
    const late: AuthenticatedKey = { id: 'pk_late', name: 'late', chain: [] };
    expect(admitKnownProxyKey(directory(late), rates, 'Bearer sk-svc-late')).toBeNull();
    expect(rates.admitted).toEqual([]);
    // the path it hands over to finds it and counts it once
    await expect(authenticateProxyKey(directory(late), rates, 'Bearer sk-svc-late')).resolves.toBe(late);
    expect(rates.admitted).toEqual(['pk_late']);
  });

  it('throws what authenticateProxyKey rejects with: no credential, the rate limit', async () => {
    expect(code(() => admitKnownProxyKey(directory(), limiter(), undefined))).toBe('missing_api_key');
    expect(code(() => admitKnownProxyKey(directory(), limiter(), 'Basic abc'))).toBe('missing_api_key');
    await expect(authenticateProxyKey(directory(), limiter(), undefined)).rejects.toMatchObject({
      code: 'missing_api_key',
    });
    const rates = limiter(1);
    admitKnownProxyKey(directory(), rates, `Bearer ${SECRET}`);
    expect(code(() => admitKnownProxyKey(directory(), rates, `Bearer ${SECRET}`))).toBe('rate_limited');
    await expect(authenticateProxyKey(directory(), rates, `Bearer ${SECRET}`)).rejects.toMatchObject({
      code: 'rate_limited',
    });
  });
});
