import type { ContinuationMode } from '../../src/config/continuation';
import { startApp, TestApp } from './app';
import { PooledProvider, ProviderPool } from './failover';

export interface StreamFailoverApp {
  pool: ProviderPool;
  t: TestApp;
  /** A key of two fresh steps of the pool, `a` (with the step timeout, if given) then `b` (with its `continuation`, if given). */
  twoStepKey: (
    label: string,
    timeoutMs?: number,
    continuation?: ContinuationMode[],
  ) => Promise<{ a: PooledProvider; b: PooledProvider; key: Awaited<ReturnType<TestApp['createKey']>> }>;
}

/**
 * Starts, around the calling describe, a pool of 50 fake OpenAI providers named `<prefix>-<i>` (and two Anthropic
 * models) and the app over them (breaker cooldown 1 s); returns them, filled in beforeAll.
 */
export function useStreamFailoverApp(prefix: string): StreamFailoverApp {
  const s = {} as StreamFailoverApp;
  beforeAll(async () => {
    s.pool = await ProviderPool.start(prefix, 50, { anthropic: { 'claude-fallback': {}, 'claude-breaks': {} } });
    s.t = await startApp({ gateway: s.pool.gateway, env: { SVC_BREAKER_COOLDOWN_MS: '1000' } });
  });
  afterAll(async () => {
    await s.t?.close();
    await s.pool?.close();
  });
  s.twoStepKey = async (label, timeoutMs, continuation) => {
    const [a, b] = s.pool.take(2);
    const key = await s.t.createKey(label, [
      { provider: a.name, model: 'm-a', ...(timeoutMs ? { timeout_ms: timeoutMs } : {}) },
      { provider: b.name, model: 'm-b', ...(continuation ? { continuation } : {}) },
    ]);
    return { a, b, key };
  };
  return s;
}
