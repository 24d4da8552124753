import { ADMIN_TOKEN, startApp, TestApp } from './support/app';
import { CHAT_PATH, chatBody, eventually, sleep } from './support/failover';
import { SqlCounter } from './support/sql-counter';
import { bodyOf, useCoalescing, WINDOW_SECS } from './support/coalescing';

// What a closing event becomes when its app stops mid-window: failover-coalescing-shutdown.e2e-spec.ts.

/** Decisions §8: failover events coalesced per condition (key, requested model, exhausted and serving provider). */
/**
 * The keys' failing steps make one attempt a request (`retries: 0`): these tests count events and failovers request
 * by request, and a retry's wait on each of 50 requests would spread them over more than one window.
 */
describe('coalesced failover events', () => {
  const s = useCoalescing('coalescing', ['first', 'zero', 'model-a', 'model-b', 'open']);

  it('delivers the first of 50 failovers in a window at once with its request id, then one closing event with coalesced_count 49', async () => {
    const key = await s.t.createKey('coalesced', [
      { provider: s.fakes.first.name, model: 'm-a', retries: 0 },
      { provider: 'echo', model: 'echo-1' },
    ]);
    await s.subscribe(s.t, key.secret, '/first');

    const opened = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push(await s.chat(s.t, key.secret));

    const [first] = await s.receiver.waitFor('/first', 1);
    expect(first.at - opened).toBeLessThan(WINDOW_SECS * 1000);
    expect(bodyOf(first).data).toEqual({
      proxy_key: key.id,
      model: 'm-a',
      exhausted_provider: s.fakes.first.name,
      active_provider: 'echo',
      fallback_level: 1,
      latency_ms: expect.any(Number),
      request_id: ids[0],
    });
    const calls = await s.receiver.waitFor('/first', 2, WINDOW_SECS * 1000 + 10000);
    await sleep(1500);
    expect(s.receiver.callsTo('/first')).toHaveLength(2);
    expect(calls[1].at - opened).toBeGreaterThanOrEqual(WINDOW_SECS * 1000);
    const closing = bodyOf(calls[1]);
    expect(closing.event).toBe('failover');
    expect(closing.id).not.toBe(bodyOf(first).id);
    expect(closing.data).toEqual({
      proxy_key: key.id,
      model: 'm-a',
      exhausted_provider: s.fakes.first.name,
      active_provider: 'echo',
      fallback_level: 1,
      latency_ms: expect.any(Number),
      request_id: ids[49],
      coalesced_count: 49,
      window_secs: WINDOW_SECS,
    });
  }, 30000);

  it('delivers each of 50 failovers with a window of 0', async () => {
    const key = await s.perRequest.createKey('per request', [
      { provider: s.fakes.zero.name, model: 'm-a', retries: 0 },
      { provider: 'echo', model: 'echo-1' },
    ]);
    await s.subscribe(s.perRequest, key.secret, '/zero');

    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push(await s.chat(s.perRequest, key.secret));

    const calls = await s.receiver.waitFor('/zero', 50, 20000);
    await sleep(1500);
    expect(s.receiver.callsTo('/zero')).toHaveLength(50);
    const bodies = calls.map(bodyOf);
    expect(bodies.map((b) => b.data.request_id).sort()).toEqual([...ids].sort());
    expect(bodies.every((b) => !('coalesced_count' in b.data))).toBe(true);
  }, 30000);

  it('gives another requested model, or another exhausted provider, an event of its own at once', async () => {
    const key = await s.t.createKey('conditions', [
      { provider: s.fakes['model-a'].name, model: 'm-a', retries: 0 },
      { provider: s.fakes['model-b'].name, model: 'm-b', retries: 0 },
      { provider: 'echo', model: 'echo-1' },
    ]);
    await s.subscribe(s.t, key.secret, '/conditions');
    const opened = Date.now();

    // m-a: both steps fail, echo serves → (m-a, model-b exhausted, echo)
    const first = await s.chat(s.t, key.secret, 'm-a');
    await s.chat(s.t, key.secret, 'm-a');
    // another requested model: m-b enters at the second step → (m-b, model-b exhausted, echo)
    const otherModel = await s.chat(s.t, key.secret, 'm-b');
    // another exhausted provider: the second step answers again → (m-a, model-a exhausted, model-b)
    s.fakes['model-b'].setMode('ok');
    const otherExhausted = await s.t.http
      .post(CHAT_PATH)
      .set('Authorization', `Bearer ${key.secret}`)
      .send(chatBody('m-a'));
    expect(otherExhausted.headers['x-svc-provider-used']).toBe(s.fakes['model-b'].name);

    const calls = await s.receiver.waitFor('/conditions', 3);
    expect(calls.every((c) => c.at - opened < WINDOW_SECS * 1000)).toBe(true);
    expect(
      calls.map((c) => bodyOf(c).data).map((d) => [d.request_id, d.model, d.exhausted_provider, d.active_provider]),
    ).toEqual(
      expect.arrayContaining([
        [first, 'm-a', s.fakes['model-b'].name, 'echo'],
        [otherModel, 'm-b', s.fakes['model-b'].name, 'echo'],
        [otherExhausted.headers['x-svc-request-id'], 'm-a', s.fakes['model-a'].name, s.fakes['model-b'].name],
      ]),
    );
    // the second m-a failover of the first condition comes in that condition's closing event
    const closing = (await s.receiver.waitFor('/conditions', 4, WINDOW_SECS * 1000 + 10000))
      .map(bodyOf)
      .filter((b) => 'coalesced_count' in b.data);
    expect(closing.map((b) => [b.data.model, b.data.exhausted_provider, b.data.coalesced_count])).toEqual([
      ['m-a', s.fakes['model-b'].name, 1],
    ]);
  }, 30000);

  it('runs no SQL on the way of the 2nd to 50th request past an open circuit', async () => {
    // a window longer than the test on any machine: a new window's first event is stored on its request's way, by design
    const long = await startApp({ gateway: s.gateway(), env: s.env(3600) });
    try {
      await noSqlPastOpenCircuit(long);
    } finally {
      await long.close();
    }
  }, 60000);

  const noSqlPastOpenCircuit = async (t: TestApp): Promise<void> => {
    const key = await t.createKey('open circuit', [
      { provider: s.fakes.open.name, model: 'm-a', retries: 0 },
      { provider: 'echo', model: 'echo-1' },
    ]);
    // five failures open the circuit (the default threshold); the window of this condition opens with the first
    for (let i = 0; i < 5; i++) await s.chat(t, key.secret);
    const tried = s.fakes.open.count(CHAT_PATH);
    const counter = SqlCounter.install(t.app.getHttpServer());
    try {
      const ids: string[] = [];
      for (let i = 0; i < 50; i++) ids.push(await s.chat(t, key.secret));

      expect(s.fakes.open.count(CHAT_PATH)).toBe(tried);
      const traced = counter.requestsTo(CHAT_PATH);
      expect(traced).toHaveLength(50);
      expect(traced.every((r) => r.finished)).toBe(true);
      expect(traced.slice(1).map((r) => r.beforeResponse)).toEqual(Array(49).fill([]));
    } finally {
      counter.uninstall();
    }
  };

  it('counts every failover per request in svc_failovers_total and the stored events per kind', async () => {
    const metrics = await eventually(
      async () => (await s.t.http.get('/metrics').set('Authorization', `Bearer ${ADMIN_TOKEN}`)).text,
      (text) => /svc_gateway_events_stored_total\{kind="failover_closing"\} [1-9]/.test(text),
      5000,
      'a closing event counted',
    );
    const value = (series: string): number =>
      Number(new RegExp(`^${series.replace(/[{}"]/g, '\\$&')} (\\d+)`, 'm').exec(metrics)?.[1] ?? NaN);
    expect(value(`svc_failovers_total{from="${s.fakes.first.name}",to="echo"}`)).toBe(50);
    // the first condition's, and the three of the other-conditions test (the open-circuit test has an app of its own)
    expect(value('svc_gateway_events_stored_total{kind="failover_first"}')).toBeGreaterThanOrEqual(4);
    expect(value('svc_gateway_events_pending')).toBe(0);
  });
});
