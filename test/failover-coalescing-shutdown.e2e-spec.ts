import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { ADMIN_TOKEN, startApp } from './support/app';
import { CHAT_PATH, chatBody, eventually } from './support/failover';
import { expectCleanExit, spawnService } from './support/process';
import { bodyOf, useCoalescing } from './support/coalescing';

/**
 * Decisions §8: the closing event of a window still open when its app stops (closed, or SIGTERM to the built service)
 * is stored, so no counted failover is lost. Coalescing itself: failover-coalescing.e2e-spec.ts.
 */
describe('coalesced failover events: an app that stops mid-window', () => {
  const s = useCoalescing('coalescing_shutdown', ['close', 'sigterm']);

  it('stores the closing event of an open window when the application closes, so no counted failover is lost', async () => {
    const closing = await startApp({ gateway: s.gateway(), env: s.env(600) });
    let closed = false;
    try {
      const key = await closing.createKey('closed mid-window', [
        { provider: s.fakes.close.name, model: 'm-a' },
        { provider: 'echo', model: 'echo-1' },
      ]);
      await s.subscribe(closing, key.secret, '/close');
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) ids.push(await s.chat(closing, key.secret));
      const before = await eventually(
        () => s.eventRows(key.id),
        (rows) => rows.length > 0,
        5000,
        'the first event stored',
      );
      expect(before.map((r) => r.data.request_id)).toEqual([ids[0]]);

      await closing.close();
      closed = true;

      const rows = await s.eventRows(key.id);
      expect(rows.map((r) => [r.data.request_id, r.data.coalesced_count])).toEqual([
        [ids[0], undefined],
        [ids[9], 9],
      ]);
      // each event stands for its own request, or for the coalesced_count requests of its window
      expect(rows.reduce((n, r) => n + Number(r.data.coalesced_count ?? 1), 0)).toBe(10);
      // the replicas still running deliver it
      const calls = await s.receiver.waitFor('/close', 2);
      // in either order: deliveries run in parallel lanes
      expect(calls.map((c) => [bodyOf(c).data.request_id, bodyOf(c).data.coalesced_count ?? null]).sort()).toEqual(
        [
          [ids[0], null],
          [ids[9], 9],
        ].sort(),
      );
    } finally {
      if (!closed) await closing.close();
    }
  }, 30000);

  it('stores the closing event of an open window when the built service gets SIGTERM, and exits 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-coalescing-'));
    const sigterm = s.fakes.sigterm;
    writeFileSync(
      join(dir, 'gateway.yaml'),
      `providers:\n  - name: echo\n    kind: echo\n  - name: ${sigterm.name}\n    kind: openai\n    base_url: ${sigterm.url}\n    api_key: x\n`,
    );
    const service = spawnService({
      ...s.env(600),
      PORT: '0',
      HOST: '127.0.0.1',
      SVC_ADMIN_TOKEN: ADMIN_TOKEN,
      SVC_CONFIG: join(dir, 'gateway.yaml'),
    });
    try {
      const [, url] = await service.waitFor(/Gateway listening on (http:\/\/\S+)/, 60000);
      const created = await request(url)
        .post('/v1/admin/keys')
        .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
        .send({
          name: 'sigterm mid-window',
          chain: [
            { provider: sigterm.name, model: 'm-a' },
            { provider: 'echo', model: 'echo-1' },
          ],
        });
      expect(created.status).toBe(201);
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) {
        const res = await request(url)
          .post(CHAT_PATH)
          .set('Authorization', `Bearer ${created.body.secret as string}`)
          .send(chatBody('m-a'));
        expect(res.headers['x-svc-is-fallback']).toBe('true');
        ids.push(res.headers['x-svc-request-id']);
      }

      service.child.kill('SIGTERM');
      await expectCleanExit(service);

      const rows = await s.eventRows(created.body.id as string);
      expect(rows.map((r) => [r.data.request_id, r.data.coalesced_count, r.data.window_secs])).toEqual([
        [ids[0], undefined, undefined],
        [ids[6], 6, 600],
      ]);
    } finally {
      service.child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90000);
});
