import { Logger } from '@nestjs/common';
import { Registry } from 'prom-client';
import type { ChainStepDto } from '../../src/config/chain-step.dto';
import type { EnvironmentVariables } from '../../src/config/env.schema';
import { GatewayConfig, ResolvedProvider } from '../../src/config/gateway-config';
import type { PgChangeFeed } from '../../src/database/pg-change-feed';
import type { BreakerStore, StoredCircuit } from '../../src/failover/breaker.store';
import type { BreakerState } from '../../src/failover/circuit-breaker';
import { CircuitRegistry } from '../../src/failover/circuit-registry';
import type { EventsService, FailoverEventData } from '../../src/failover/events.service';
import { FailoverService } from '../../src/failover/failover.service';
import type { Attempt } from '../../src/failover/attempt-records';
import type { FailoverScope } from '../../src/failover/failover-scope';
import type { AuthenticatedKey } from '../../src/keys/key-directory';
import type { MetricsService } from '../../src/metrics/metrics.service';
import { AdapterRegistry } from '../../src/providers/adapter-registry';
import type { AdapterFactory, CallContext, ChatCompletion } from '../../src/providers/provider-adapter';
import { UpstreamFailure, UpstreamOutcome } from '../../src/providers/provider-adapter';
import type { StepQuotasRepository } from '../../src/quotas/step-quotas.repository';
import { StepQuotas } from '../../src/quotas/step-quotas.service';
import type { NewUsageRecord } from '../../src/usage/usage-records.repository';
import type { UsageWriter } from '../../src/usage/usage.writer';

/** What a provider's upstream does with one call. */
export type Behaviour = (ctx: CallContext) => Promise<ChatCompletion>;

export const serve =
  (text: string): Behaviour =>
  () =>
    Promise.resolve({ text });
export const fail =
  (outcome: Exclude<UpstreamOutcome, { kind: 'ok' }>): Behaviour =>
  () =>
    Promise.reject(new UpstreamFailure(outcome));
/** Never answers: rejects with the signal's reason once the core aborts the call (timeout, client gone). */
export const hang: Behaviour = (ctx) =>
  new Promise((_, reject) =>
    ctx.signal.addEventListener('abort', () =>
      reject(ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error(String(ctx.signal.reason))),
    ),
  );

export const step = (provider: string, model: string, extra: Partial<ChainStepDto> = {}): ChainStepDto => ({
  provider,
  model,
  ...extra,
});

export const BREAKER_THRESHOLD = 3;
export const BREAKER_COOLDOWN_MS = 30_000;

/** The circuits' shared table in memory (one row per provider, compare-and-set on its version). */
class MemoryBreakerStore {
  private readonly rows = new Map<string, StoredCircuit>();
  get(provider: string): Promise<StoredCircuit | null> {
    const row = this.rows.get(provider);
    return Promise.resolve(row ? { ...row } : null);
  }
  ensure(provider: string, initial: BreakerState): Promise<void> {
    if (!this.rows.has(provider)) this.rows.set(provider, { provider, state: initial, version: 0 });
    return Promise.resolve();
  }
  compareAndSet(provider: string, version: number, next: BreakerState): Promise<boolean> {
    const row = this.rows.get(provider);
    if (!row || row.version !== version) return Promise.resolve(false);
    this.rows.set(provider, { provider, state: next, version: version + 1 });
    return Promise.resolve(true);
  }
  all(): Promise<StoredCircuit[]> {
    return Promise.resolve([...this.rows.values()]);
  }
}

/** Records what the core reports to Prometheus. */
class FakeMetrics {
  /** Where the failover core registers its own series. */
  readonly registry = new Registry();
  readonly attempts: Array<[provider: string, ok: boolean]> = [];
  readonly failovers: Array<[from: string | null, to: string]> = [];
  upstreamAttempt(provider: string, ok: boolean): void {
    this.attempts.push([provider, ok]);
  }
  failover(from: string | null, to: string): void {
    this.failovers.push([from, to]);
  }
}

class FakeEvents {
  readonly failovers: FailoverEventData[] = [];
  recordFailover(e: FailoverEventData): Promise<void> | null {
    this.failovers.push(e);
    return null;
  }
  readonly recoveries: string[] = [];
  recordRecovered(provider: string): void {
    this.recoveries.push(provider);
  }
}

class FakeUsage {
  readonly records: NewUsageRecord[] = [];
  add(record: NewUsageRecord): void {
    this.records.push(record);
  }
}

/**
 * A FailoverService over real configuration, adapter registry, circuits and step quotas (their
 * tables in memory), with fake events, usage and metrics that record what they are told.
 * Providers p1, p2, p3 (chat) have adapters; `ghost` is configured but has none (no factory of its kind).
 */
export function failoverHarness(chain: ChainStepDto[], providerTimeoutMs: Record<string, number> = {}) {
  Logger.overrideLogger(false);
  const resolved = (name: string, kind: 'echo' | 'openai'): ResolvedProvider => ({
    name,
    kind,
    baseUrl: null,
    apiKey: null,
    groupId: null,
    timeoutMs: providerTimeoutMs[name] ?? null,
    capabilities: ['chat'],
  });
  const gateway = new GatewayConfig(
    [resolved('p1', 'echo'), resolved('p2', 'echo'), resolved('p3', 'echo'), resolved('ghost', 'openai')],
    [],
  );
  /** Per provider: what its upstream does; `calls` lists the providers called, in order. */
  const behave: Record<string, Behaviour> = {};
  const calls: string[] = [];
  const echoFactory: AdapterFactory = {
    kind: 'echo',
    create: (provider) => ({
      provider,
      kind: 'echo',
      probe: () => Promise.resolve(),
      chat: (_request, ctx) => {
        calls.push(provider.name);
        return (behave[provider.name] ?? serve(provider.name))(ctx);
      },
    }),
  };
  const env = {
    SVC_BREAKER_THRESHOLD: BREAKER_THRESHOLD,
    SVC_BREAKER_COOLDOWN_MS: BREAKER_COOLDOWN_MS,
    SVC_SYNC_INTERVAL_MS: 1000,
  } as EnvironmentVariables;
  const adapters = new AdapterRegistry(gateway, [echoFactory]);
  const feed = { notify: () => Promise.resolve(), subscribe: () => Promise.resolve() } as unknown as PgChangeFeed;
  const events = new FakeEvents();
  const circuits = new CircuitRegistry(
    new MemoryBreakerStore() as unknown as BreakerStore,
    feed,
    adapters,
    events as unknown as EventsService,
    env,
  );
  const quotas = new StepQuotas({} as StepQuotasRepository, env);
  const metrics = new FakeMetrics();
  const usage = new FakeUsage();
  const failover = new FailoverService(
    gateway,
    adapters,
    circuits,
    quotas,
    events as unknown as EventsService,
    usage as unknown as UsageWriter,
    metrics as unknown as MetricsService,
  );
  const key: AuthenticatedKey = { id: 'pk_test', name: 'test', chain };
  let requests = 0;
  const scope = (): FailoverScope => failover.openScope(`req_${++requests}`, key, 'chat');
  const chat: Attempt<ChatCompletion> = (adapter, ctx) => adapter.chat!({ model: ctx.model, messages: [] }, ctx);
  /** Trips a provider's circuit (BREAKER_THRESHOLD failures) and waits until the shared row has it. */
  const openCircuit = async (provider: string): Promise<void> => {
    for (let i = 0; i < BREAKER_THRESHOLD; i++) circuits.recordFailure(provider);
    await circuits.flushAll();
  };
  return { failover, circuits, quotas, metrics, events, usage, key, behave, calls, scope, chat, openCircuit };
}

/** The rejection of `promise` (fails the test if it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}
