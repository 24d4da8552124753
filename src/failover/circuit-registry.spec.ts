import type { EnvironmentVariables } from '../config/env.schema';
import type { PgChangeFeed } from '../database/pg-change-feed';
import type { AdapterRegistry } from '../providers/adapter-registry';
import type { BreakerStore, StoredCircuit } from './breaker.store';
import type { BreakerState } from './circuit-breaker';
import { CircuitRegistry } from './circuit-registry';
import type { EventsService } from './events.service';

/** The shared row in memory, counting the compare-and-set writes the registry makes. */
class MemoryStore {
  row: StoredCircuit | null = null;
  writes = 0;

  get(): Promise<StoredCircuit | null> {
    return Promise.resolve(this.row && { ...this.row });
  }

  ensure(provider: string, initial: BreakerState): Promise<void> {
    this.row ??= { provider, state: initial, version: 0 };
    return Promise.resolve();
  }

  compareAndSet(provider: string, version: number, next: BreakerState): Promise<boolean> {
    if (!this.row || this.row.version !== version) return Promise.resolve(false);
    this.writes += 1;
    this.row = { provider, state: next, version: version + 1 };
    return Promise.resolve(true);
  }

  all(): Promise<StoredCircuit[]> {
    return Promise.resolve(this.row ? [this.row] : []);
  }
}

const tick = (ms = 0): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('CircuitRegistry writes', () => {
  let store: MemoryStore;
  let registry: CircuitRegistry;

  beforeEach(() => {
    store = new MemoryStore();
    const feed = { notify: () => Promise.resolve(), subscribe: () => Promise.resolve() } as unknown as PgChangeFeed;
    const env = {
      SVC_BREAKER_THRESHOLD: 1000,
      SVC_BREAKER_COOLDOWN_MS: 30000,
      SVC_SYNC_INTERVAL_MS: 1000,
    } as EnvironmentVariables;
    registry = new CircuitRegistry(
      store as unknown as BreakerStore,
      feed,
      { pool: () => undefined } as unknown as AdapterRegistry,
      {} as EventsService,
      env,
    );
  });

  it('writes a status change at once, and coalesces outcomes that only move the count into one later write', async () => {
    registry.recordFailure('p'); // healthy -> degraded: the other replicas must know now
    await tick();
    await tick();
    expect(store.writes).toBe(1);
    expect(store.row?.state).toMatchObject({ status: 'degraded', consecutiveFailures: 1 });

    for (let i = 0; i < 20; i++) registry.recordFailure('p'); // degraded, count only
    await tick();
    expect(store.writes).toBe(1);
    await tick(80);
    expect(store.writes).toBe(2);
    expect(store.row?.state).toMatchObject({ status: 'degraded', consecutiveFailures: 21 });

    registry.recordSuccess('p'); // degraded -> healthy: at once again
    await tick();
    await tick();
    expect(store.writes).toBe(3);
    expect(store.row?.state).toMatchObject({ status: 'healthy', consecutiveFailures: 0 });
  });

  it('writes pending count-only outcomes on flushAll without waiting', async () => {
    registry.recordFailure('p');
    await registry.flushAll();
    registry.recordFailure('p');
    registry.recordFailure('p');
    await registry.flushAll();
    expect(store.row?.state).toMatchObject({ status: 'degraded', consecutiveFailures: 3 });
    expect(store.writes).toBe(2);
  });
});

describe('CircuitRegistry half-open trial', () => {
  const COOLDOWN_MS = 20;
  let store: MemoryStore;
  let recovered: string[];
  const replica = (): CircuitRegistry => {
    const feed = { notify: () => Promise.resolve(), subscribe: () => Promise.resolve() } as unknown as PgChangeFeed;
    const env = {
      SVC_BREAKER_THRESHOLD: 1,
      SVC_BREAKER_COOLDOWN_MS: COOLDOWN_MS,
      SVC_SYNC_INTERVAL_MS: 1000,
    } as EnvironmentVariables;
    const events = { recordRecovered: (_p: string, requestId: string) => recovered.push(requestId) };
    return new CircuitRegistry(
      store as unknown as BreakerStore,
      feed,
      { pool: () => undefined } as unknown as AdapterRegistry,
      events as unknown as EventsService,
      env,
    );
  };

  /** Trips `p` through `registry` and waits out the cooldown. */
  const tripAndCoolDown = async (registry: CircuitRegistry): Promise<void> => {
    registry.recordFailure('p');
    await registry.flushAll();
    await tick(COOLDOWN_MS + 5);
  };

  beforeEach(() => {
    store = new MemoryStore();
    recovered = [];
  });

  it('lets exactly one request of two replicas be the trial, and its success closes the circuit with one recovery', async () => {
    const [a, b] = [replica(), replica()];
    await tripAndCoolDown(a);
    // b mirrors the tripped row as a NOTIFY would make it
    await (b as unknown as { sync(): Promise<void> }).sync();

    const admitted = await Promise.all([a.admit('p', 'req_1'), b.admit('p', 'req_2'), a.admit('p', 'req_3')]);
    expect(admitted.filter(Boolean)).toHaveLength(1);
    const winner = admitted[0] ? 'req_1' : 'req_2';
    expect(store.row?.state.status).toBe('recovering');
    expect(a.view('p').status).toBe('recovering');

    const holder = winner === 'req_1' ? a : b;
    holder.recordSuccess('p', 'req_other'); // not the trial: changes nothing
    expect(holder.view('p').status).toBe('recovering');
    holder.recordSuccess('p', winner);
    expect(holder.view('p').status).toBe('healthy');
    await holder.onApplicationShutdown();
    expect(store.row?.state).toEqual({ status: 'healthy', consecutiveFailures: 0, openUntil: null });
    expect(recovered).toEqual([winner]);
  });

  it('opens the circuit for another cooldown when the trial fails', async () => {
    const a = replica();
    await tripAndCoolDown(a);
    expect(await a.admit('p', 'req_1')).toBe(true);
    a.recordFailure('p', 'req_1');
    expect(a.view('p').status).toBe('down');
    await a.onApplicationShutdown();
    expect(store.row?.state).toMatchObject({ status: 'down', consecutiveFailures: 2 });
    expect(recovered).toEqual([]);
  });

  it('frees the slot when the trial request ends without a verdict, so the next request is the trial', async () => {
    const a = replica();
    await tripAndCoolDown(a);
    expect(await a.admit('p', 'req_1')).toBe(true);
    expect(await a.admit('p', 'req_2')).toBe(false);
    a.requestEnded('req_1');
    await a.flushAll();
    await tick();
    expect(store.row?.state).toMatchObject({ status: 'recovering', openUntil: null });
    expect(await a.admit('p', 'req_2')).toBe(true);
  });
});
