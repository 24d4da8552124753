import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeOpenAi, startFakeOpenAi } from './fakes/fake-openai';
import { startApp, TestApp } from './support/app';
import { CHAT_PATH, chatBody, entryOf, eventually, health, servedAlert, sleep } from './support/failover';
import { SPEECH_PATH } from './support/speech';
import { StreamClient } from './support/ws-client';

/**
 * Breaker fault attribution (decisions §11): the shared circuit counts only the provider's own
 * faults. A key's short step timeout and a client that leaves are not the provider's fault.
 */
describe('breaker fault attribution', () => {
  let slow: FakeOpenAi;
  let tight: FakeOpenAi;
  let hanging: FakeOpenAi;
  let backup: FakeOpenAi;
  let t: TestApp;

  beforeAll(async () => {
    [slow, tight, hanging, backup] = await Promise.all(
      ['fa-slow', 'fa-tight', 'fa-hanging', 'fa-backup'].map((name) => startFakeOpenAi({ name })),
    );
    const provider = (name: string, fake: FakeOpenAi, extra = ''): string =>
      `  - name: ${name}\n    kind: openai\n    base_url: ${fake.url}\n    api_key: x${extra}`;
    const yaml = [
      'providers:',
      provider('fa-slow', slow),
      // the provider's own deadline: a timeout past it is the provider's fault
      provider('fa-tight', tight, '\n    timeout_ms: 300'),
      provider('fa-hanging', hanging),
      provider('fa-backup', backup),
    ].join('\n');
    t = await startApp({ gateway: parseGatewayConfig(yaml, 'attribution test gateway') });
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([slow, tight, hanging, backup].map((fake) => fake?.close()));
  });

  const post = (secret: string, body: Record<string, unknown>) =>
    t.http.post(CHAT_PATH).set('Authorization', `Bearer ${secret}`).send(body);

  it("fails a key's short step timeout over without opening the provider's circuit for another key", async () => {
    slow.setMode('slowFirstByte', { delayMs: 1000 });
    const f = await t.createKey('F: impatient', [
      { provider: 'fa-slow', model: 'm-slow', timeout_ms: 300 },
      { provider: 'fa-backup', model: 'm-backup' },
    ]);
    const g = await t.createKey('G: patient, no fallback', [{ provider: 'fa-slow', model: 'm-slow' }]);

    // more than the breaker threshold (5): every one fails over on F's own deadline
    for (let i = 0; i < 7; i++) {
      const res = await post(f.secret, chatBody('m-slow'));
      expect(res.status).toBe(200);
      expect(res.headers['x-svc-provider-used']).toBe('fa-backup');
      expect(res.headers['x-svc-fallback-level']).toBe('1');
      expect(JSON.parse(res.headers['x-svc-fallback-alert'])).toEqual(
        servedAlert('fa-slow', 'timeout', 'fa-backup', 1),
      );
    }
    expect(slow.count(CHAT_PATH)).toBe(7);

    const served = await post(g.secret, chatBody('m-slow'));
    expect(served.status).toBe(200);
    expect(served.headers['x-svc-provider-used']).toBe('fa-slow');
    expect(served.headers['x-svc-is-fallback']).toBe('false');
    expect(slow.count(CHAT_PATH)).toBe(8);

    const seenByG = await health(t, g.secret);
    expect(seenByG.overall).toBe('operational');
    expect(entryOf(seenByG, 'fa-slow')).toMatchObject({
      status: 'healthy',
      consecutive_failures: 0,
      cooldown_remaining_secs: 0,
    });
    // F still calls the provider on every request: nothing was skipped as open
    expect(entryOf(await health(t, f.secret), 'fa-slow')).toMatchObject({ status: 'healthy', consecutive_failures: 0 });
  });

  it("counts a timeout past the provider's own timeout_ms, and trips after 5", async () => {
    tight.setMode('hang');
    const key = await t.createKey('tight', [
      { provider: 'fa-tight', model: 'm-tight' },
      { provider: 'fa-backup', model: 'm-backup' },
    ]);
    for (let i = 0; i < 6; i++) {
      const res = await post(key.secret, chatBody('m-tight'));
      expect(res.status).toBe(200);
      expect(res.headers['x-svc-provider-used']).toBe('fa-backup');
    }
    // the 6th request skipped the open circuit without calling it
    expect(tight.count(CHAT_PATH)).toBe(5);
    expect(entryOf(await health(t, key.secret), 'fa-tight')).toMatchObject({ status: 'down', consecutive_failures: 5 });
  });

  it('never counts a client that leaves (chat, chat stream, speech, speech stream) against the provider', async () => {
    hanging.setMode('hang');
    const key = await t.createKey('leaver', [
      { provider: 'fa-hanging', model: 'm-hang' },
      { provider: 'fa-hanging', model: 'tts-1', voice_map: { '*': 'alloy' } },
    ]);
    const leave = async (path: string, body: Record<string, unknown>): Promise<void> => {
      const before = hanging.requests.length;
      const controller = new AbortController();
      const sent = fetch(`${t.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: controller.signal,
      }).catch(() => undefined);
      // leave only once the gateway is waiting on the provider
      await eventually(
        () => hanging.requests.length,
        (n) => n > before,
        5000,
        `the upstream call of ${path}`,
      );
      controller.abort();
      await sent;
    };
    const speech = { model: 'tts-1', text: 'Hello there.', voice_setting: { voice_id: 'alloy' } };
    for (let i = 0; i < 2; i++) {
      await leave(CHAT_PATH, chatBody('m-hang'));
      await leave(CHAT_PATH, chatBody('m-hang', { stream: true }));
      await leave(SPEECH_PATH, speech);
    }
    const before = hanging.requests.length;
    const ws = await StreamClient.connect(`${t.url.replace('http', 'ws')}/v1/audio/speech/stream`, {
      Authorization: `Bearer ${key.secret}`,
    });
    ws.send({ event: 'task_start', ...speech, text: undefined });
    await ws.waitFor((m) => m.event === 'task_started');
    ws.send({ event: 'task_continue', text: 'Hello there.' });
    await eventually(
      () => hanging.requests.length,
      (n) => n > before,
      5000,
      'the upstream call of the speech stream',
    );
    ws.ws.terminate();
    await ws.closed;

    // seven requests left while the provider was working on them: more than the threshold, none counted
    await sleep(300);
    expect(hanging.requests.length).toBe(7);
    expect(entryOf(await health(t, key.secret), 'fa-hanging')).toMatchObject({
      status: 'healthy',
      consecutive_failures: 0,
    });
  });
});
