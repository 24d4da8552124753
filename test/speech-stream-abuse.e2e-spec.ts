import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { ADMIN_TOKEN } from './support/app';
import { eventually } from './support/failover';
import { ServiceProcess, spawnService } from './support/process';
import { StreamClient } from './support/ws-client';

const START = {
  event: 'task_start',
  model: 'speech-02-hd',
  voice_setting: { voice_id: 'en-us' },
  audio_setting: { format: 'pcm' },
};
const STALL_MS = 1500;
const BURST = 500;
const EACH_KIND = 20;
/** Sockets the service may open or close on its own meanwhile (database pool, keep-alive). */
const SOCKET_SLACK = 12;
/**
 * Resident memory the service may keep after the abuse: V8 keeps the heap it grew (about 60 MB after a
 * burst of 500 connections, flat over repeated bursts), while audio buffered for a client that never reads
 * would be gigabytes. A bound, not a measurement.
 */
const RSS_SLACK_KB = 200 * 1024;

/** The service's resident memory, from the kernel. */
function rssKb(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error('no VmRSS');
  return Number(match[1]);
}

/** The inodes of the service's open sockets. */
function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1]);
    } catch {
      // closed while we looked
    }
  }
  return inodes;
}

/** True while the service still holds its end of the TCP connection from the client's local port. */
function serverHoldsConnection(pid: number, serverPort: number, clientPort: number): boolean {
  const hex = (port: number): string => port.toString(16).toUpperCase().padStart(4, '0');
  const held = socketInodes(pid);
  return readFileSync(`/proc/${pid}/net/tcp`, 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .some(
      (cols) =>
        cols.length > 9 &&
        cols[1].endsWith(`:${hex(serverPort)}`) &&
        cols[2].endsWith(`:${hex(clientPort)}`) &&
        held.has(cols[9]),
    );
}

const underlyingSocket = (ws: WebSocket): Socket => (ws as unknown as { _socket: Socket })._socket;

/** Speech WebSocket abuse (hardening): the built service in its own process, so its memory and sockets are its own. */
describe('speech WebSocket abuse', () => {
  let dir: string;
  let service: ServiceProcess;
  let pid: number;
  let port: number;
  let wsUrl: string;
  let secret: string;
  let baselineSockets: number;
  let baselineRssKb: number;

  const connect = async (): Promise<StreamClient> => {
    const client = await StreamClient.connect(wsUrl, { Authorization: `Bearer ${secret}` });
    client.ws.on('error', () => undefined);
    return client;
  };

  /** A whole task, as a well-behaved client runs it. */
  const speakOnce = async (): Promise<void> => {
    const client = await connect();
    client.send(START);
    await client.waitFor((m) => m.event === 'task_started');
    client.send({ event: 'task_continue', text: 'A normal sentence. And another one.' });
    client.send({ event: 'task_finish' });
    await client.waitFor((m) => m.event === 'task_finished');
    expect(await client.closed).toBe(1000);
  };

  /** Sockets and memory back near the baseline, and the service still speaks. */
  const expectRecovered = async (): Promise<void> => {
    await eventually(
      () => socketInodes(pid).size,
      (n) => n <= baselineSockets + SOCKET_SLACK,
      30_000,
      'service sockets back near the baseline',
    );
    expect(rssKb(pid)).toBeLessThan(baselineRssKb + RSS_SLACK_KB);
    await speakOnce();
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-ws-abuse-'));
    writeFileSync(join(dir, 'gateway.yaml'), 'providers:\n  - name: espeak\n    kind: espeak\n');
    service = spawnService({
      PORT: '0',
      HOST: '127.0.0.1',
      SVC_ADMIN_TOKEN: ADMIN_TOKEN,
      SVC_CONFIG: join(dir, 'gateway.yaml'),
      SVC_DEMO_KEY: 'false',
      SVC_WS_STALL_MS: String(STALL_MS),
      SVC_WS_MAX_STREAMS_PER_KEY: String(BURST * 2),
    });
    const [, url] = await service.waitFor(/Gateway listening on (http:\/\/\S+)/, 60000);
    pid = service.child.pid!;
    port = Number(new URL(url).port);
    wsUrl = `${url.replace('http', 'ws')}/v1/audio/speech/stream`;
    const created = await fetch(`${url}/v1/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ws abuse', chain: [{ provider: 'espeak', model: 'speech-02-hd' }] }),
    });
    secret = ((await created.json()) as { secret: string }).secret;
    // warm-up: the offline engine and every lazily loaded module belong to the baseline
    await speakOnce();
    await speakOnce();
    baselineSockets = socketInodes(pid).size;
    baselineRssKb = rssKb(pid);
  }, 120_000);
  afterAll(async () => {
    if (service) {
      service.child.kill('SIGTERM');
      await service.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  const KINDS: Array<[string, (c: StreamClient) => void, number]> = [
    ['a binary frame', (c) => c.ws.send(Buffer.from([0xde, 0xad, 0xbe, 0xef])), 1008],
    ['invalid JSON', (c) => c.ws.send('{"event": "task_start",'), 1008],
    ['JSON that is not an object', (c) => c.ws.send('[1, 2, 3]'), 1008],
    ['an unknown event', (c) => c.send({ event: 'task_pause' }), 1008],
    ['task_continue before task_start', (c) => c.send({ event: 'task_continue', text: 'Too early.' }), 1008],
    ['task_finish before task_start', (c) => c.send({ event: 'task_finish' }), 1008],
    ['two task_starts sent back to back', (c) => [START, START].forEach((m) => c.send(m)), 1008],
    ['a 1 MB text chunk', (c) => c.send({ event: 'task_continue', text: 'a'.repeat(1024 * 1024) }), 1009],
  ];

  it(`answers ${EACH_KIND} connections at once of each kind of bad message with task_failed or a close code, and recovers`, async () => {
    const runs = KINDS.flatMap(([what, misbehave, code]) =>
      Array.from({ length: EACH_KIND }, async () => {
        const client = await connect();
        await client.waitFor((m) => m.event === 'connected_success');
        misbehave(client);
        const closedWith = await client.closed;
        const failed = client.messages.find((m) => m.event === 'task_failed');
        return { what, expected: code, closedWith, failedBeforeClose: code === 1009 || failed !== undefined };
      }),
    );
    const outcomes = await Promise.all(runs);

    const wrong = outcomes.filter((o) => o.closedWith !== o.expected || !o.failedBeforeClose);
    expect(wrong).toEqual([]);
    await expectRecovered();
  });

  it('refuses a frame nested 20,000 deep with task_failed invalid_value and 1008, not an overflowed stack', async () => {
    const client = await connect();
    client.send(START);
    await client.waitFor((m) => m.event === 'task_started');
    client.ws.send(`{"event":"task_continue","text":"hi","x":${'['.repeat(20_000)}${']'.repeat(20_000)}}`);

    expect(await client.closed).toBe(1008);
    const failed = client.messages.find((m) => m.event === 'task_failed');
    expect(failed?.error).toMatchObject({ code: 'invalid_value' });
    await speakOnce();
    // after another whole turn: a line about the frame would have left the log's buffer (flushed every 100 ms)
    expect(service.output()).not.toMatch(/Maximum call stack/);
  });

  it('takes a 10,000-emoji task_continue sent JSON-escaped, as json.dumps does (over 64 KiB)', async () => {
    const client = await connect();
    client.send(START);
    await client.waitFor((m) => m.event === 'task_started');
    // JSON.stringify sends emoji raw; Python escapes each as 12 bytes
    const escaped = `{"event":"task_continue","text":"${'\\ud83d\\ude00'.repeat(10_000)}"}`;
    expect(Buffer.byteLength(escaped)).toBeGreaterThan(64 * 1024);
    client.ws.send(escaped);
    client.send({ event: 'task_continue', text: 'Still listening.' });

    await client.waitFor((m) => m.event === 'task_continued', 60_000);
    expect(client.messages.some((m) => m.event === 'task_failed')).toBe(false);
    expect(client.closeCode).toBeNull();
    client.ws.close(1000);
    await client.closed;
  }, 90_000);

  it(`survives ${BURST} connections opened and dropped at once, some mid-task and some mid-handshake`, async () => {
    const runs = Array.from({ length: BURST }, async (_, i) => {
      const ws = new WebSocket(wsUrl, { headers: { Authorization: `Bearer ${secret}` } });
      ws.on('error', () => undefined);
      if (i % 5 === 0) {
        // dropped during the handshake
        ws.terminate();
        return;
      }
      await new Promise<void>((resolve) => {
        ws.once('open', () => resolve());
        ws.once('close', () => resolve());
      });
      if (i % 2 === 0 && ws.readyState === WebSocket.OPEN) {
        ws.send(JSON.stringify(START));
        ws.send(JSON.stringify({ event: 'task_continue', text: 'Dropped before this is spoken. Really.' }));
      }
      ws.terminate();
    });
    await Promise.all(runs);

    await expectRecovered();
  });

  it('closes a client that stops reading while audio is streamed, instead of buffering for it', async () => {
    const client = await connect();
    client.send({ ...START, audio_setting: { format: 'pcm', sample_rate: 44100, channel: 2 } });
    await client.waitFor((m) => m.event === 'task_started');
    // far more audio than any socket buffer holds: minutes of 44.1 kHz stereo
    const text = 'This sentence is spoken again and again while nobody listens. '.repeat(150);
    for (let i = 0; i < 5; i++) client.send({ event: 'task_continue', text });
    await client.waitFor((m) => m.event === 'task_continued');
    const socket = underlyingSocket(client.ws);
    const clientPort = socket.localPort!;
    socket.pause();
    expect(serverHoldsConnection(pid, port, clientPort)).toBe(true);

    await eventually(
      () => serverHoldsConnection(pid, port, clientPort),
      (held) => !held,
      60_000,
      'the service dropped the stalled client',
    );
    socket.resume();

    // the connection ends without the task's end: no task_finished, no normal close
    expect(await client.closed).not.toBe(1000);
    expect(client.messages.some((m) => m.event === 'task_finished')).toBe(false);
    await expectRecovered();
  }, 120_000);
});
