import type { FakeOpenAi } from './fakes/fake-openai';
import { startApp, TestApp } from './support/app';
import {
  CHAT_PATH,
  chatBody,
  entryOf,
  eventually,
  health,
  PooledProvider,
  ProviderPool,
  sleep,
} from './support/failover';

/** How the flipping upstream behaves in one phase; `refused` closes its listening socket (ECONNREFUSED). */
type Phase = 'ok' | 'error500' | 'hang' | 'refused';
/** Every fault, each between two healthy phases so the breaker has something to recover to. */
const PHASES: Phase[] = ['ok', 'error500', 'ok', 'hang', 'ok', 'refused'];
const CYCLES = 1;
const PHASE_MS = 1000;

const FLIPPING_TIMEOUT_MS = 400;
/** The steady fallback's timeout: generous, so a busy machine never makes it fail. */
const FALLBACK_TIMEOUT_MS = 5000;
const COOLDOWN_MS = 500;
/** The longest chain's step timeouts, plus room for a machine shared with other test runs. */
const BUDGET_MS = FLIPPING_TIMEOUT_MS + FALLBACK_TIMEOUT_MS + 5000;
const CONCURRENCY = 10;
/** A bound on the loop whatever the machine's speed. */
const MAX_REQUESTS = 800;
/** Each client pauses between its requests, so the load spans every phase. */
const PAUSE_MS = 25;
/** Sockets that may stay open on top of the baseline once keep-alive and idle database connections have timed out. */
const SOCKET_SLACK = 6;
const RSS_SLACK_BYTES = 256 * 1024 * 1024;

/** TCP sockets and servers of this process (gateway, fakes and client all live here). */
const tcpHandles = (): number =>
  process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap' || r === 'TCPServerWrap').length;

async function enterPhase(fake: FakeOpenAi, phase: Phase): Promise<void> {
  if (phase === 'refused') return fake.refuseConnections();
  await fake.acceptConnections();
  fake.setMode(phase);
}

interface Outcome {
  /** Which key sent it. */
  key: 'alone' | 'withFallback';
  /** HTTP status, or 0 when no answer came within the budget. */
  status: number;
  body: unknown;
}

const upstreamError = {
  error: {
    message: expect.any(String),
    type: 'upstream_error',
    param: null,
    code: expect.stringMatching(/^(all_providers_failed|no_provider_available)$/),
  },
};

/** Upstream faults at scale (hardening): an upstream flipping between OK, 500, hang and refused under concurrent load. */
describe('upstream faults under concurrent load', () => {
  let pool: ProviderPool;
  let t: TestApp;
  let flipping: PooledProvider;
  let steady: PooledProvider;
  /** Chain [flipping]: its answers are the flipping upstream's. */
  let alone: string;
  /** Chain [flipping, steady]: always served. */
  let withFallback: string;

  beforeAll(async () => {
    pool = await ProviderPool.start('faults', 2);
    t = await startApp({ gateway: pool.gateway, env: { SVC_BREAKER_COOLDOWN_MS: String(COOLDOWN_MS) } });
    [flipping, steady] = pool.take(2);
    alone =
      // one attempt a request (`retries: 0`): the phases and budgets are sized for it; retries have their own suite
      (
        await t.createKey('flipping upstream alone', [
          { provider: flipping.name, model: 'm-a', timeout_ms: FLIPPING_TIMEOUT_MS, retries: 0 },
        ])
      ).secret;
    withFallback = (
      await t.createKey('flipping upstream with a fallback', [
        { provider: flipping.name, model: 'm-a', timeout_ms: FLIPPING_TIMEOUT_MS, retries: 0 },
        { provider: steady.name, model: 'm-b', timeout_ms: FALLBACK_TIMEOUT_MS },
      ])
    ).secret;
  });
  afterAll(async () => {
    await t?.close();
    await pool?.close();
  });

  const chat = async (key: Outcome['key']): Promise<Outcome> => {
    try {
      const res = await fetch(`${t.url}${CHAT_PATH}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key === 'alone' ? alone : withFallback}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify(chatBody('m-a')),
        signal: AbortSignal.timeout(BUDGET_MS),
      });
      return { key, status: res.status, body: await res.json() };
    } catch (err) {
      return { key, status: 0, body: String(err) };
    }
  };

  it('ends every request with a served answer or a clean 502/503 in budget, trips and recovers the breaker, and leaks no sockets or memory', async () => {
    // warm-up: pools and lazily loaded code belong to the baseline
    for (let i = 0; i < 3; i++) expect((await chat('alone')).status).toBe(200);
    const socketsBefore = tcpHandles();
    const rssBefore = process.memoryUsage().rss;

    const outcomes: Outcome[] = [];
    const flippingStatuses = new Set<string>();
    let done = false;
    const flipper = async (): Promise<void> => {
      for (let cycle = 0; cycle < CYCLES; cycle++) {
        for (const phase of PHASES) {
          await enterPhase(flipping.fake, phase);
          await sleep(PHASE_MS);
        }
      }
      done = true;
    };
    const monitor = async (): Promise<void> => {
      while (!done) {
        flippingStatuses.add(entryOf(await health(t, withFallback), flipping.name)?.status ?? 'missing');
        await sleep(100);
      }
    };
    let sent = 0;
    const client = async (n: number): Promise<void> => {
      while (!done && sent < MAX_REQUESTS) {
        sent += 1;
        outcomes.push(await chat(n % 2 === 0 ? 'alone' : 'withFallback'));
        await sleep(PAUSE_MS);
      }
    };
    await Promise.all([flipper(), monitor(), ...Array.from({ length: CONCURRENCY }, (_, n) => client(n))]);

    const unexpected = outcomes.filter((o) => ![200, 502, 503, 504].includes(o.status));
    expect(unexpected).toEqual([]);
    for (const o of outcomes) {
      if (o.status === 200)
        expect(o.body).toMatchObject({ object: 'chat.completion', provider: expect.stringMatching(/^faults-/) });
      else expect(o.body).toEqual(upstreamError);
    }
    // a working fallback serves every request, whatever the first upstream does
    expect(outcomes.filter((o) => o.key === 'withFallback' && o.status !== 200)).toEqual([]);
    // alone, the flipping upstream's faults reach the client as 502, and as 503 while its circuit is open
    const alone = new Set(outcomes.filter((o) => o.key === 'alone').map((o) => o.status));
    expect([...alone].sort()).toEqual([200, 502, 503]);
    expect([...flippingStatuses]).toContain('down');

    // healthy for good: once the cooldown is over, the next real request is the breaker's trial (decisions §3),
    // and its success closes the circuit
    await enterPhase(flipping.fake, 'ok');
    const served = await eventually(
      () => chat('withFallback'),
      (o) => o.status === 200 && (o.body as { provider?: string }).provider === flipping.name,
      COOLDOWN_MS * 2 + 10_000,
      'a request served by the flipping provider, its trial',
    );
    expect(served).toMatchObject({ status: 200, body: { provider: flipping.name } });
    expect((await health(t, withFallback)).overall).toBe('operational');

    // idle keep-alive sockets time out within seconds; hung, reset or refused calls must leave none behind
    await eventually(
      () => tcpHandles(),
      (n) => n <= socketsBefore + SOCKET_SLACK,
      30_000,
      'open TCP handles back near the baseline',
    );
    expect(process.memoryUsage().rss).toBeLessThan(rssBefore + RSS_SLACK_BYTES);
  }, 180_000);
});
