import { connect, type Socket } from 'node:net';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeFirehose, startFakeFirehose } from './fakes/fake-firehose';
import { startApp, TestApp } from './support/app';
import {
  CHAT_PATH,
  chatBody,
  contentOf,
  entryOf,
  eventually,
  health,
  parseSse,
  sleep,
  streamChat,
} from './support/failover';
import { SPEECH_PATH } from './support/speech';

jest.setTimeout(120000);

/** The provider's sockets and one key's share of them: 8 and half, so a key holds at most 4. */
const CONNECTIONS = 8;
const KEY_SHARE = 4;
/** SVC_HTTP_STALL_MS: longer than the provider's timeout, so a socket held to it would time another key out. */
const STALL_MS = 4000;
/** The provider's timeout_ms: W's calls still waiting for a socket when it passes time out in the gateway. */
const TIMEOUT_MS = 2000;
/** Each bound is met well within this on a busy shared machine. */
const MARGIN_MS = 8000;

/** A streaming chat whose client sends its request, then never reads: its socket's buffers fill and stay full. */
function nonReadingStream(url: string, secret: string, model: string): Socket {
  const { port } = new URL(url);
  const body = JSON.stringify({ ...chatBody(model), stream: true });
  const socket = connect(Number(port), '127.0.0.1');
  socket.pause(); // Node reads up to its high-water mark, then leaves the rest in the kernel
  socket.on('error', () => undefined);
  socket.write(
    `POST ${CHAT_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${secret}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  return socket;
}

/**
 * Fair shares of a provider's upstream sockets (decisions §11, issue 36 finding 3): one key's streaming chats whose
 * clients stop reading cannot take the provider from another key, waiting for a socket is never the provider's
 * failure, a response left unread is dropped after SVC_HTTP_STALL_MS, and a body that trickles for ever is cut.
 */
describe('upstream sockets shared per key', () => {
  let fire: FakeFirehose;
  let t: TestApp;
  let w: string;
  let g: string;

  beforeAll(async () => {
    fire = await startFakeFirehose();
    fire.setMode('firehose', { model: 'w-firehose' });
    const gateway = parseGatewayConfig(
      [
        'providers:',
        `  - { name: us-fire, kind: openai, base_url: "${fire.url}", api_key: k, timeout_ms: ${TIMEOUT_MS} }`,
      ].join('\n'),
      'upstream sockets test',
    );
    t = await startApp({
      gateway,
      env: {
        SVC_UPSTREAM_CONNECTIONS: String(CONNECTIONS),
        SVC_UPSTREAM_KEY_SHARE: String(KEY_SHARE / CONNECTIONS),
        SVC_HTTP_STALL_MS: String(STALL_MS),
      },
    });
    w = // w-ok first: it is not a fallback of w-firehose (only later steps are)
      (
        await t.createKey('W: clients that stop reading', [
          { provider: 'us-fire', model: 'w-ok' },
          { provider: 'us-fire', model: 'w-firehose' },
        ])
      ).secret;
    g = (await t.createKey('G: another tenant', [{ provider: 'us-fire', model: 'g-ok' }])).secret;
  });
  afterAll(async () => {
    await t?.close();
    await fire?.close();
    delete process.env.SVC_UPSTREAM_CONNECTIONS;
    delete process.env.SVC_UPSTREAM_KEY_SHARE;
    delete process.env.SVC_HTTP_STALL_MS;
  });

  it("40 non-reading streams of key W: G is answered at once, the provider stays healthy, W's stalled answers are dropped", async () => {
    const started = Date.now();
    const clients = Array.from({ length: 40 }, () => nonReadingStream(t.url, w, 'w-firehose'));
    try {
      // W holds its share of the sockets, no more: its other 36 calls wait in the gateway
      await eventually(
        () => fire.open,
        (open) => open === KEY_SHARE,
        MARGIN_MS,
        'W holding its share',
      );
      await sleep(300);
      expect(fire.open).toBe(KEY_SHARE);
      const firstWave = fire.requests.filter((r) => r.model === 'w-firehose');
      expect(firstWave).toHaveLength(KEY_SHARE);

      // G's requests, JSON and stream, each answered by the same provider in well under 2 s
      for (let i = 0; i < 4; i++) {
        const asked = Date.now();
        const res = await t.http.post(CHAT_PATH).set('Authorization', `Bearer ${g}`).send(chatBody('g-ok'));
        expect(Date.now() - asked).toBeLessThan(2000);
        expect(res.status).toBe(200);
        expect(res.headers['x-svc-provider-used']).toBe('us-fire');
        expect(res.headers['x-svc-is-fallback']).toBe('false');
      }
      const streamed = await streamChat(t, g, chatBody('g-ok'));
      expect(streamed.totalMs).toBeLessThan(2000);
      expect(streamed.status).toBe(200);
      expect(streamed.content).toBe('pong');

      // W's waiting calls passed their deadline in the gateway's queue, while W's share was still held: not one of
      // those 36 timeouts is the provider's
      await sleep(Math.max(0, started + TIMEOUT_MS + 800 - Date.now()));
      expect(firstWave.filter((r) => r.closedEarly)).toHaveLength(0);
      expect(fire.requests.filter((r) => r.model === 'w-firehose')).toHaveLength(KEY_SHARE);
      const seen = entryOf(await health(t, g), 'us-fire');
      expect(seen).toMatchObject({ status: 'healthy', consecutive_failures: 0 });

      // the stalled answers are dropped after the stall limit, and their upstream calls cancelled
      await eventually(
        () => firstWave.filter((r) => r.closedEarly).length,
        (closed) => closed === KEY_SHARE,
        STALL_MS + MARGIN_MS,
        "W's stalled upstream calls cancelled",
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(STALL_MS);

      // the sockets came back: W itself is served again, and the provider is still healthy
      const again = await t.http.post(CHAT_PATH).set('Authorization', `Bearer ${w}`).send(chatBody('w-ok'));
      expect(again.status).toBe(200);
      expect(entryOf(await health(t, w), 'us-fire')).toMatchObject({ status: 'healthy', consecutive_failures: 0 });
    } finally {
      for (const client of clients) client.destroy();
    }
  });

  it('a dropped stream is cut short for its client: what it finally reads has no clean end', async () => {
    const client = nonReadingStream(t.url, w, 'w-firehose');
    const before = fire.requests.length;
    await eventually(
      () => fire.requests.length,
      (n) => n > before,
      MARGIN_MS,
      'the stream reaching the provider',
    );
    const call = fire.requests[before];
    await eventually(() => call.closedEarly, Boolean, STALL_MS + MARGIN_MS, 'the stalled call cancelled');
    // reading now gets what the buffers held, then the end of the connection: no [DONE], no last chunk of the body
    const parts: Buffer[] = [];
    const ended = new Promise<void>((resolve) => client.once('close', () => resolve()));
    client.on('data', (part: Buffer) => parts.push(part));
    client.resume();
    await ended;
    const text = Buffer.concat(parts).toString('latin1');
    expect(text.startsWith('HTTP/1.1 200')).toBe(true);
    expect(text).not.toContain('data: [DONE]');
    expect(text.endsWith('\r\n0\r\n\r\n')).toBe(false);
  });
});

/** A provider that drip-feeds under its idle timeout: the whole body is still bounded (issue 36 part 4). */
describe('a total bound for a slow upstream body', () => {
  const IDLE_MS = 1000;
  const TOTAL_MS = 1500;
  const DRIP_TIMEOUT_MS = 2500;
  let drip: FakeFirehose;
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    drip = await startFakeFirehose();
    drip.setMode('drip');
    const gateway = parseGatewayConfig(
      [
        'providers:',
        `  - { name: us-drip, kind: openai, base_url: "${drip.url}", api_key: k, timeout_ms: ${DRIP_TIMEOUT_MS},` +
          ` stream_idle_timeout_ms: ${IDLE_MS}, stream_total_timeout_ms: ${TOTAL_MS} }`,
      ].join('\n'),
      'slow body test',
    );
    t = await startApp({ gateway });
    key = (await t.createKey('drip', [{ provider: 'us-drip', model: 'drip', voice_map: { '*': 'alloy' } }])).secret;
  });
  afterAll(async () => {
    await t?.close();
    await drip?.close();
  });

  it('a chat stream that trickles under the idle timeout ends at stream_total_timeout_ms with its error event', async () => {
    const asked = Date.now();
    const res = await fetch(`${t.url}${CHAT_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...chatBody('drip'), stream: true }),
      signal: AbortSignal.timeout(TOTAL_MS + MARGIN_MS),
    });
    expect(res.status).toBe(200);
    const events = parseSse(await res.text());
    expect(Date.now() - asked).toBeGreaterThanOrEqual(TOTAL_MS - 100);
    expect(contentOf(events).length).toBeGreaterThan(2); // it was flowing, a dot every 200 ms
    const last = events[events.length - 1];
    expect(last).toMatchObject({ error: { code: 'upstream_stream_failed', type: 'upstream_error' } });
    expect(JSON.stringify(last)).toContain('STREAM_TOO_LONG');
    expect(events).not.toContain('[DONE]');
    await eventually(() => drip.requests[drip.requests.length - 1].closedEarly, Boolean, MARGIN_MS, 'upstream cut');
  });

  it('a JSON reply that trickles is bounded by timeout_ms, for the whole body', async () => {
    const asked = Date.now();
    const res = await t.http.post(CHAT_PATH).set('Authorization', `Bearer ${key}`).send(chatBody('drip'));
    expect(Date.now() - asked).toBeGreaterThanOrEqual(DRIP_TIMEOUT_MS - 100);
    expect(Date.now() - asked).toBeLessThan(DRIP_TIMEOUT_MS + MARGIN_MS);
    expect(res.status).toBe(502);
    expect(res.body.error).toMatchObject({ code: 'all_providers_failed' });
    expect(res.body.error.message).toContain('us-drip (timeout)');
  });

  it('speech audio that trickles is cut at stream_total_timeout_ms, not left open', async () => {
    const asked = Date.now();
    const res = await fetch(`${t.url}${SPEECH_PATH}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'drip',
        text: 'A slow voice.',
        voice_setting: { voice_id: 'narrator' },
        audio_setting: { format: 'pcm', sample_rate: 24000 },
      }),
      signal: AbortSignal.timeout(TOTAL_MS + MARGIN_MS),
    });
    expect(res.status).toBe(200);
    const read = await res.arrayBuffer().then(
      () => 'complete',
      (err: Error) => (err.name === 'TimeoutError' ? 'still open' : 'cut'),
    );
    expect(read).toBe('cut');
    expect(Date.now() - asked).toBeGreaterThanOrEqual(TOTAL_MS - 100);
    await eventually(() => drip.requests[drip.requests.length - 1].closedEarly, Boolean, MARGIN_MS, 'upstream cut');
  });
});
