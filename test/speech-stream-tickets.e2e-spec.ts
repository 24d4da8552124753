import { DataSource } from 'typeorm';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { hashSecret } from '../src/keys/key-directory';
import { startApp, TestApp } from './support/app';
import { speak } from './support/speech';
import { eventually, sleep } from './support/failover';
import { refusedUpgrade, StreamClient } from './support/ws-client';
import { admin, bearer, MODEL, PATHS, useMiniMaxStreamApps } from './support/speech-stream-minimax-app';

// The speech WebSocket's security (issue 18): tickets, revocation, and the usage of async tasks; how MiniMax's own
// clients speak it: speech-stream-minimax.e2e-spec.ts.

describe('speech WebSocket: tickets, revocation, usage of async tasks', () => {
  const s = useMiniMaxStreamApps();

  describe('tickets', () => {
    const issue = async (
      via: TestApp = s.t,
      secret = s.espeakKey.secret,
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
      const client = await open(s.t, ticket);
      client.send({ event: 'task_start', model: MODEL, voice_setting: { voice_id: 'en-us' } });
      expect(await client.waitFor((m) => m.event === 'task_started')).toMatchObject({ provider: 'espeak' });
      client.ws.close();
      await refusedTicket(s.t, ticket);
    });

    it('is single use across instances: issued on one, redeemed on the other, then refused on both', async () => {
      const { ticket } = await issue(s.t);
      const client = await open(s.other, ticket);
      client.ws.close();
      await refusedTicket(s.t, ticket);
      await refusedTicket(s.other, ticket);
    });

    it('lets exactly one of two simultaneous upgrades on two instances redeem a ticket', async () => {
      const { ticket } = await issue(s.t);
      const attempts = await Promise.allSettled([open(s.t, ticket), open(s.other, ticket)]);
      expect(attempts.filter((a) => a.status === 'fulfilled')).toHaveLength(1);
      for (const a of attempts) if (a.status === 'fulfilled') a.value.ws.close();
    });

    it('refuses an expired ticket, a made-up one, and the ticket of a key deleted since', async () => {
      const expired = await issue();
      // a minute later, as far as the database can tell
      await s.t.app
        .get(DataSource)
        .query(`UPDATE stream_tickets SET expires_at = now() - interval '1 second' WHERE ticket_hash = $1`, [
          hashSecret(expired.ticket),
        ]);
      await refusedTicket(s.t, expired.ticket);
      await refusedTicket(s.t, 'wst_madeupmadeupmadeupmadeupmadeup12');
      const doomed = await s.t.createKey('ticket doomed', [{ provider: 'espeak', model: MODEL }]);
      const orphan = await issue(s.t, doomed.secret);
      expect((await s.t.http.delete(`/v1/admin/keys/${doomed.id}`).set(admin)).status).toBe(200);
      await refusedTicket(s.t, orphan.ticket);
    });

    it('needs a proxy key to issue one', async () => {
      const res = await s.t.http.post('/v1/audio/speech/stream/tickets');
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('missing_api_key');
    });
  });

  describe('a refused upgrade does not spend its ticket', () => {
    let capped: TestApp;
    beforeAll(async () => {
      capped = await startApp({
        gateway: parseGatewayConfig('providers:\n  - { name: espeak, kind: espeak }\n', 'capped ws test'),
        env: { SVC_WS_MAX_STREAMS_PER_KEY: '1' },
      });
    }, 120000);
    afterAll(() => capped?.close());

    it('a ticket refused with 429 too_many_streams opens a stream once the key has room, and only once', async () => {
      const key = await capped.createKey('ticket capped', [{ provider: 'espeak', model: MODEL }]);
      const wsUrl = `${capped.url.replace('http', 'ws')}${PATHS[0]}`;
      const holder = await StreamClient.connect(wsUrl, bearer(key.secret));
      await holder.waitFor((m) => m.event === 'connected_success');
      const res = await capped.http.post('/v1/audio/speech/stream/tickets').set(bearer(key.secret));
      const { ticket } = res.body as { ticket: string };
      const refused = await refusedUpgrade(`${wsUrl}?ticket=${ticket}`);
      expect(refused.status).toBe(429);
      expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'too_many_streams' } });
      holder.ws.close();
      await holder.closed;
      // the server counts the stream closed when it sees the close: a moment after the client does
      await sleep(300);
      // the key has room now: the same ticket opens one stream, concurrently at most once
      const attempts = await Promise.allSettled([
        StreamClient.connect(`${wsUrl}?ticket=${ticket}`),
        StreamClient.connect(`${wsUrl}?ticket=${ticket}`),
      ]);
      const opened = attempts.filter((a) => a.status === 'fulfilled');
      expect(opened).toHaveLength(1);
      for (const a of opened) a.value.ws.close();
      const again = await refusedUpgrade(`${wsUrl}?ticket=${ticket}`);
      expect(again.status).toBe(401);
      expect(JSON.parse(again.body)).toMatchObject({ error: { code: 'invalid_ticket' } });
    });
  });

  describe('revocation', () => {
    it.each([
      ['task_continue', { event: 'task_continue', text: 'Should never be spoken.' }],
      ['task_finish', { event: 'task_finish' }],
    ])(
      'refuses the next message (%s) of an open stream whose key was deleted: task_failed key_revoked, close 1008, no audio',
      async (_, next) => {
        const key = await s.t.createKey('revoked idle', [{ provider: 'espeak', model: MODEL }]);
        const client = await StreamClient.connect(`${s.ws}${PATHS[0]}`, bearer(key.secret));
        client.send({ event: 'task_start', model: MODEL, voice_setting: { voice_id: 'en-us' } });
        await client.waitFor((m) => m.event === 'task_started');
        expect((await s.t.http.delete(`/v1/admin/keys/${key.id}`).set(admin)).status).toBe(200);
        client.send(next);
        const failed = await client.waitFor((m) => m.event === 'task_failed');
        expect(failed.error).toMatchObject({ code: 'key_revoked' });
        expect(failed.base_resp).toMatchObject({ status_code: 1004 });
        expect(await client.closed).toBe(1008);
        expect(client.messages.filter((m) => m.event === 'task_continued')).toEqual([]);
      },
    );

    it('stops the audio of a long text once the key is deleted', async () => {
      const key = await s.t.createKey('revoked busy', [{ provider: 'espeak', model: MODEL }]);
      const client = await StreamClient.connect(`${s.ws}${PATHS[0]}`, bearer(key.secret));
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
      expect((await s.t.http.delete(`/v1/admin/keys/${key.id}`).set(admin)).status).toBe(200);
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
      const key = await s.t.createKey('rechained', [{ provider: 'espeak', model: MODEL }]);
      const client = await StreamClient.connect(`${s.ws}${PATHS[1]}`, bearer(key.secret));
      await client.waitFor((m) => m.event === 'connected_success');
      const patched = await s.t.http
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
    // records of the key of its own (in one file with the MiniMax client tests, those made them): pages need three or more
    beforeAll(async () => {
      for (const text of ['One.', 'Two.', 'Three.']) {
        const res = await speak(s.t, s.espeakKey.secret, { model: MODEL, text, voice_setting: { voice_id: 'en-us' } });
        expect(res.status).toBe(200);
      }
    });

    it('finds the records of a task by its id, and of one chunk by the chunk request id', async () => {
      const created = await s.t.http
        .post('/v1/audio/speech/async')
        .set(bearer(s.espeakKey.secret))
        .send({ model: MODEL, text: 'An async task, spoken in the background.', voice_setting: { voice_id: 'en-us' } });
      expect(created.status).toBe(202);
      const taskId = created.body.id as string;
      await eventually(
        () => s.t.http.get(`/v1/audio/speech/async/${taskId}`).set(bearer(s.espeakKey.secret)),
        (res) => res.body.status === 'completed',
        30000,
        'the task to complete',
      );
      const byTask = await eventually(
        () => s.usage(s.espeakKey.secret, `task_id=${taskId}`),
        (res) => res.status === 200 && res.body.data.length > 0,
        5000,
        'usage of the task',
      );
      const ids = (byTask.body.data as Array<{ request_id: string }>).map((r) => r.request_id);
      for (const id of ids) expect(id).toMatch(new RegExp(`^req_${taskId}_\\d+$`));
      const chunk = await s.usage(s.espeakKey.secret, `request_id=${ids[0]}`);
      expect(chunk.status).toBe(200);
      expect(chunk.body.data[0]).toMatchObject({ request_id: ids[0], capability: 'speech', status: 200 });
      // another key sees none of it
      expect((await s.usage(s.minimaxKey.secret, `task_id=${taskId}`)).body.data).toEqual([]);
    });

    it('takes request_id or task_id, not both (with neither: every record of the key, in pages)', async () => {
      const all = await s.usage(s.espeakKey.secret, 'limit=2');
      expect(all.status).toBe(200);
      expect(all.body).toMatchObject({ object: 'list', has_more: true });
      expect(all.body.data).toHaveLength(2);
      expect((await s.usage(s.espeakKey.secret, 'request_id=req_a&task_id=task_b')).status).toBe(400);
      expect((await s.usage(s.espeakKey.secret, 'task_id=req_nope')).status).toBe(400);
    });
  });
});
