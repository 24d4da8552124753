import { DataSource } from 'typeorm';
import { parseFirstMp3Frame } from '../src/audio/parse';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { hashSecret } from '../src/keys/key-directory';
import { startFakeMiniMax, FakeMiniMax } from './fakes/fake-minimax';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';
import { eventually, sleep } from './support/failover';
import { speakLikeMiniMaxClient } from './support/minimax-ws-client';
import { refusedUpgrade, StreamClient } from './support/ws-client';

const MODEL = 'speech-02-hd';
const TEXTS = ['Hello there.', 'This is the second thing I say.', 'And a third, short one.'];
const PATHS = ['/v1/audio/speech/stream', '/ws/v1/t2a_v2'];
const SUCCESS = { status_code: 0, status_msg: 'success' };

/** Every server message of a connection carries the envelope of decisions §7. */
function expectEnvelope(client: StreamClient, baseResp: object = SUCCESS): void {
  const sessionId = client.messages[0].session_id;
  expect(sessionId).toMatch(/^sess_/);
  const traceId = client.upgradeHeaders['x-svc-request-id'];
  expect(traceId).toMatch(/^req_/);
  for (const m of client.messages) {
    expect(m).toMatchObject({ session_id: sessionId, trace_id: traceId });
    expect(m.base_resp).toEqual(m.event === 'task_failed' ? baseResp : SUCCESS);
  }
}

/** The speech WebSocket as MiniMax's own clients speak it (decisions §7, §10), and its security (issue 18). */
describe('speech WebSocket: MiniMax clients, tickets, revocation', () => {
  let t: TestApp;
  let other: TestApp;
  let minimax: FakeMiniMax;
  let espeakKey: { id: string; secret: string };
  let minimaxKey: { id: string; secret: string };
  let ws: string;

  const gatewayYaml = (url: string): string =>
    `providers:\n  - { name: mm, kind: minimax, base_url: "${url}", api_key: k }\n  - { name: espeak, kind: espeak }\n`;
  const bearer = (secret: string): Record<string, string> => ({ Authorization: `Bearer ${secret}` });
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeAll(async () => {
    minimax = await startFakeMiniMax({ name: 'mm' });
    const gateway = parseGatewayConfig(gatewayYaml(minimax.url), 'minimax ws test');
    // two instances on one database: a ticket from one is redeemed by the other
    t = await startApp({ gateway });
    other = await startApp({ gateway: parseGatewayConfig(gatewayYaml(minimax.url), 'minimax ws test b') });
    espeakKey = await t.createKey('ws espeak', [{ provider: 'espeak', model: MODEL }]);
    minimaxKey = await t.createKey('ws minimax', [
      { provider: 'mm', model: MODEL, voice_map: { '*': 'male-qn-qingse' } },
    ]);
    ws = t.url.replace('http', 'ws');
  }, 120000);
  afterAll(async () => {
    await other?.close();
    await t?.close();
    await minimax?.close();
  });

  const usage = (secret: string, query: string) => t.http.get(`/v1/usage?${query}`).set(bearer(secret));

  it("sends MiniMax's optional task_start fields to a MiniMax step as the client sent them", async () => {
    minimax.reset();
    const extra = { language_boost: 'English', voice_modify: { pitch: 10, intensity: -5 }, aigc_watermark: true };
    const { client } = await speakLikeMiniMaxClient(
      `${ws}${PATHS[1]}`,
      bearer(minimaxKey.secret),
      { event: 'task_start', model: MODEL, voice_setting: { voice_id: 'male-qn-qingse', emotion: 'calm' }, ...extra },
      ['Fields travel with every text.'],
    );
    expect(client.closeCode).toBe(1000);
    const sent = minimax.requests.filter((r) => r.path === '/v1/t2a_v2').map((r) => r.body as Record<string, unknown>);
    expect(sent.length).toBeGreaterThan(0);
    for (const body of sent)
      expect(body).toMatchObject({ ...extra, voice_setting: { voice_id: 'male-qn-qingse', emotion: 'calm' } });
  });

  describe.each([
    ['espeak', () => espeakKey],
    ['the MiniMax upstream', () => minimaxKey],
  ])('a client that waits for is_final after every task_continue, on %s', (_, key) => {
    it.each(PATHS)(
      'gets each text answered with is_final and extra_info within 2 s, three times, on %s',
      async (path) => {
        const { client, utterances, started } = await speakLikeMiniMaxClient(
          `${ws}${path}`,
          bearer(key().secret),
          {
            event: 'task_start',
            model: MODEL,
            voice_setting: { voice_id: 'en-us' },
            audio_setting: { format: 'mp3', sample_rate: 32000, channel: 1 },
          },
          TEXTS,
        );
        expect(client.closeCode).toBe(1000);
        expectEnvelope(client);
        const traceId = client.upgradeHeaders['x-svc-request-id'] as string;
        expect(started.request_id).toBe(traceId);
        expect(utterances).toHaveLength(3);
        utterances.forEach((u, i) => {
          // exactly the last message of each text is final, and it carries audio and MiniMax's extra_info
          expect(u.messages.map((m) => m.is_final)).toEqual([...u.messages.slice(1).map(() => false), true]);
          expect(u.audio.length).toBeGreaterThan(0);
          for (const m of u.messages) expect(m.request_id).toBe(`${traceId}_${i + 1}`);
          const last = u.messages[u.messages.length - 1];
          expect(last.extra_info).toEqual({
            audio_length: expect.any(Number),
            audio_sample_rate: 32000,
            audio_size: u.audio.length,
            audio_format: 'mp3',
            audio_channel: 1,
            usage_characters: u.text.length,
            bitrate: 128000,
          });
          expect((last.extra_info as { audio_length: number }).audio_length).toBeGreaterThan(100);
          expect(parseFirstMp3Frame(u.audio).sampleRate).toBe(32000);
        });
        // nothing after the last is_final but task_finished
        expect(client.messages[client.messages.length - 1].event).toBe('task_finished');

        // the usage of the stream is found by its trace_id, and of each text by that text's request_id
        const all = await eventually(
          () => usage(key().secret, `request_id=${traceId}`),
          (res) => res.status === 200 && res.body.data.length === 3,
          5000,
          'usage of the stream',
        );
        expect((all.body.data as Array<{ request_id: string }>).map((r) => r.request_id)).toEqual(
          [1, 2, 3].map((n) => `${traceId}_${n}`),
        );
        const second = await usage(key().secret, `request_id=${traceId}_2`);
        expect(second.body.data).toEqual([
          expect.objectContaining({ request_id: `${traceId}_2`, characters: TEXTS[1].length, status: 200 }),
        ]);
      },
    );
  });

  it('answers a text that makes no audio with an is_final message too (empty audio), so the client is not left waiting', async () => {
    const { utterances } = await speakLikeMiniMaxClient(
      `${ws}${PATHS[1]}`,
      bearer(espeakKey.secret),
      { event: 'task_start', model: MODEL, voice_setting: { voice_id: 'en-us' } },
      ['   ', 'Now words.'],
    );
    expect(utterances[0].messages).toEqual([
      expect.objectContaining({
        is_final: true,
        data: { audio: '' },
        extra_info: expect.objectContaining({ audio_size: 0, audio_length: 0 }),
      }),
    ]);
    expect(utterances[1].audio.length).toBeGreaterThan(0);
  });

  it.each([
    [
      'an invalid parameter',
      { event: 'task_start', model: MODEL, voice_setting: { voice_id: 'en-us', speed: 9 } },
      'invalid_value',
      2013,
    ],
    [
      'an unknown voice',
      { event: 'task_start', model: MODEL, voice_setting: { voice_id: 'no-such-voice' } },
      'voice_not_found',
      2013,
    ],
  ])('puts MiniMax status code on task_failed for %s', async (_, start, code, status) => {
    const client = await StreamClient.connect(`${ws}${PATHS[1]}`, bearer(espeakKey.secret));
    client.send(start);
    const failed = await client.waitFor((m) => m.event === 'task_failed');
    expect(failed.error).toMatchObject({ code });
    expect((failed.base_resp as { status_code: number }).status_code).toBe(status);
    expect(await client.closed).toBe(1008);
    expectEnvelope(client, failed.base_resp as object);
  });

  it('answers an upgrade on an unknown path with 404 in the error shape, without echoing the query', async () => {
    const refused = await refusedUpgrade(`${ws}/v1/audio/speech/streams?api_key=${espeakKey.secret}`);
    expect(refused.status).toBe(404);
    expect(refused.requestId).toMatch(/^req_/);
    expect(JSON.parse(refused.body)).toMatchObject({
      error: {
        type: 'not_found_error',
        code: 'route_not_found',
        message: expect.stringContaining('/v1/audio/speech/streams'),
      },
    });
    expect(refused.body).not.toContain(espeakKey.secret);
    expect(refused.body).not.toContain('api_key');
  });

  describe('tickets', () => {
    const issue = async (
      via: TestApp = t,
      secret = espeakKey.secret,
    ): Promise<{ ticket: string; expires_at: number }> => {
      const res = await via.http.post('/v1/audio/speech/stream/tickets').set(bearer(secret));
      expect(res.status).toBe(201);
      return res.body as { ticket: string; expires_at: number };
    };
    const open = async (via: TestApp, ticket: string): Promise<StreamClient> => {
      const client = await StreamClient.connect(`${via.url.replace('http', 'ws')}${PATHS[0]}?ticket=${ticket}`);
      await client.waitFor((m) => m.event === 'connected_success');
      return client;
    };
    const refusedTicket = async (via: TestApp, ticket: string): Promise<void> => {
      const refused = await refusedUpgrade(`${via.url.replace('http', 'ws')}${PATHS[0]}?ticket=${ticket}`);
      expect(refused.status).toBe(401);
      expect(JSON.parse(refused.body)).toMatchObject({
        error: { type: 'authentication_error', code: 'invalid_ticket' },
      });
      expect(refused.body).not.toContain(ticket);
    };

    it('issues a ticket valid 60 s that opens one stream, under the key that asked, and is refused the second time', async () => {
      const before = Math.floor(Date.now() / 1000);
      const { ticket, expires_at } = await issue();
      expect(ticket).toMatch(/^wst_[0-9A-Za-z]{32}$/);
      expect(expires_at).toBeGreaterThanOrEqual(before + 59);
      expect(expires_at).toBeLessThanOrEqual(before + 61);
      // the stream speaks under the ticket's key: its chain (espeak) serves it
      const client = await open(t, ticket);
      client.send({ event: 'task_start', model: MODEL, voice_setting: { voice_id: 'en-us' } });
      expect(await client.waitFor((m) => m.event === 'task_started')).toMatchObject({ provider: 'espeak' });
      client.ws.close();
      await refusedTicket(t, ticket);
    });

    it('is single use across instances: issued on one, redeemed on the other, then refused on both', async () => {
      const { ticket } = await issue(t);
      const client = await open(other, ticket);
      client.ws.close();
      await refusedTicket(t, ticket);
      await refusedTicket(other, ticket);
    });

    it('lets exactly one of two simultaneous upgrades on two instances redeem a ticket', async () => {
      const { ticket } = await issue(t);
      const attempts = await Promise.allSettled([open(t, ticket), open(other, ticket)]);
      expect(attempts.filter((a) => a.status === 'fulfilled')).toHaveLength(1);
      for (const a of attempts) if (a.status === 'fulfilled') a.value.ws.close();
    });

    it('refuses an expired ticket, a made-up one, and the ticket of a key deleted since', async () => {
      const expired = await issue();
      // a minute later, as far as the database can tell
      await t.app
        .get(DataSource)
        .query(`UPDATE stream_tickets SET expires_at = now() - interval '1 second' WHERE ticket_hash = $1`, [
          hashSecret(expired.ticket),
        ]);
      await refusedTicket(t, expired.ticket);
      await refusedTicket(t, 'wst_madeupmadeupmadeupmadeupmadeup12');
      const doomed = await t.createKey('ticket doomed', [{ provider: 'espeak', model: MODEL }]);
      const orphan = await issue(t, doomed.secret);
      expect((await t.http.delete(`/v1/admin/keys/${doomed.id}`).set(admin)).status).toBe(200);
      await refusedTicket(t, orphan.ticket);
    });

    it('needs a proxy key to issue one', async () => {
      const res = await t.http.post('/v1/audio/speech/stream/tickets');
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('missing_api_key');
    });
  });

  describe('revocation', () => {
    it.each([
      ['task_continue', { event: 'task_continue', text: 'Should never be spoken.' }],
      ['task_finish', { event: 'task_finish' }],
    ])(
      'refuses the next message (%s) of an open stream whose key was deleted: task_failed key_revoked, close 1008, no audio',
      async (_, next) => {
        const key = await t.createKey('revoked idle', [{ provider: 'espeak', model: MODEL }]);
        const client = await StreamClient.connect(`${ws}${PATHS[0]}`, bearer(key.secret));
        client.send({ event: 'task_start', model: MODEL, voice_setting: { voice_id: 'en-us' } });
        await client.waitFor((m) => m.event === 'task_started');
        expect((await t.http.delete(`/v1/admin/keys/${key.id}`).set(admin)).status).toBe(200);
        client.send(next);
        const failed = await client.waitFor((m) => m.event === 'task_failed');
        expect(failed.error).toMatchObject({ code: 'key_revoked' });
        expect(failed.base_resp).toMatchObject({ status_code: 1004 });
        expect(await client.closed).toBe(1008);
        expect(client.messages.filter((m) => m.event === 'task_continued')).toEqual([]);
      },
    );

    it('stops the audio of a long text once the key is deleted', async () => {
      const key = await t.createKey('revoked busy', [{ provider: 'espeak', model: MODEL }]);
      const client = await StreamClient.connect(`${ws}${PATHS[0]}`, bearer(key.secret));
      client.send({
        event: 'task_start',
        model: MODEL,
        voice_setting: { voice_id: 'en-us' },
        audio_setting: { format: 'pcm', sample_rate: 44100, channel: 2 },
      });
      await client.waitFor((m) => m.event === 'task_started');
      // about 100 s of speech (17 MB of pcm); the client reads nothing meanwhile, so synthesis waits at the 1 MiB mark
      const long = Array.from(
        { length: 24 },
        (_, i) => `Sentence number ${i + 1} keeps the engine busy for a while longer.`,
      ).join(' ');
      client.ws.pause();
      client.send({ event: 'task_continue', text: long });
      await sleep(1500);
      expect((await t.http.delete(`/v1/admin/keys/${key.id}`).set(admin)).status).toBe(200);
      client.send({ event: 'task_continue', text: 'And more.' });
      client.ws.resume();
      const failed = await client.waitFor((m) => m.event === 'task_failed', 20000);
      expect(failed.error).toMatchObject({ code: 'key_revoked' });
      expect(await client.closed).toBe(1008);
      // what was already buffered arrives; the rest of the 17 MB is never made
      const pcm = client.audio();
      expect(pcm.length).toBeLessThan(8 * 1024 * 1024);
      expect(client.messages.some((m) => m.is_final === true)).toBe(false);
    }, 60000);

    it('serves task_start with the chain the key has then, not the one it had on the upgrade', async () => {
      const key = await t.createKey('rechained', [{ provider: 'espeak', model: MODEL }]);
      const client = await StreamClient.connect(`${ws}${PATHS[1]}`, bearer(key.secret));
      await client.waitFor((m) => m.event === 'connected_success');
      const patched = await t.http
        .patch(`/v1/admin/keys/${key.id}`)
        .set(admin)
        .send({ chain: [{ provider: 'mm', model: MODEL, voice_map: { '*': 'male-qn-qingse' } }] });
      expect(patched.status).toBe(200);
      client.send({ event: 'task_start', model: MODEL, voice_setting: { voice_id: 'en-us' } });
      expect(await client.waitFor((m) => m.event === 'task_started')).toMatchObject({
        provider: 'mm',
        fallback_level: 0,
      });
      client.send({ event: 'task_continue', text: 'Spoken by the new chain.' });
      expect(await client.waitFor((m) => m.event === 'task_continued' && m.is_final === true)).toMatchObject({
        provider: 'mm',
      });
      client.ws.close();
    });
  });

  describe('usage of async tasks', () => {
    it('finds the records of a task by its id, and of one chunk by the chunk request id', async () => {
      const created = await t.http
        .post('/v1/audio/speech/async')
        .set(bearer(espeakKey.secret))
        .send({ model: MODEL, text: 'An async task, spoken in the background.', voice_setting: { voice_id: 'en-us' } });
      expect(created.status).toBe(202);
      const taskId = created.body.id as string;
      await eventually(
        () => t.http.get(`/v1/audio/speech/async/${taskId}`).set(bearer(espeakKey.secret)),
        (res) => res.body.status === 'completed',
        30000,
        'the task to complete',
      );
      const byTask = await eventually(
        () => usage(espeakKey.secret, `task_id=${taskId}`),
        (res) => res.status === 200 && res.body.data.length > 0,
        5000,
        'usage of the task',
      );
      const ids = (byTask.body.data as Array<{ request_id: string }>).map((r) => r.request_id);
      for (const id of ids) expect(id).toMatch(new RegExp(`^req_${taskId}_\\d+$`));
      const chunk = await usage(espeakKey.secret, `request_id=${ids[0]}`);
      expect(chunk.status).toBe(200);
      expect(chunk.body.data[0]).toMatchObject({ request_id: ids[0], capability: 'speech', status: 200 });
      // another key sees none of it
      expect((await usage(minimaxKey.secret, `task_id=${taskId}`)).body.data).toEqual([]);
    });

    it('takes request_id or task_id, not both (with neither: every record of the key, in pages)', async () => {
      const all = await usage(espeakKey.secret, 'limit=2');
      expect(all.status).toBe(200);
      expect(all.body).toMatchObject({ object: 'list', has_more: true });
      expect(all.body.data).toHaveLength(2);
      expect((await usage(espeakKey.secret, 'request_id=req_a&task_id=task_b')).status).toBe(400);
      expect((await usage(espeakKey.secret, 'task_id=req_nope')).status).toBe(400);
    });
  });
});
