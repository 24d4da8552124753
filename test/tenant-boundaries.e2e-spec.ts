import { DataSource } from 'typeorm';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';
import { KNOWN_OPERATIONS } from './support/fuzz/fixtures';
import { loadOperations, Operation } from './support/fuzz/openapi';
import { deleteKey, makeTenant, Tenant } from './support/tenants';

const operations = loadOperations();

/** The row of a tenant each path parameter names. */
const ID_OF: Record<string, (t: Tenant) => string> = {
  consent_id: (t) => t.consentId,
  task_id: (t) => t.taskId,
  webhook_id: (t) => t.webhookId,
};

/** Operations on one row of a key: every path parameter is one of those above. */
const rowOperations = operations.filter(
  (op) => op.auth === 'proxy' && op.pathParams.length > 0 && op.pathParams.every((p) => p.name in ID_OF),
);
const proxyOperations = operations.filter((op) => op.auth === 'proxy');
const adminOperations = operations.filter((op) => op.auth === 'admin');

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}

interface ListBody {
  data: Array<{ id: string; provider: string }>;
}

const pathFor = (op: Operation, ids: (name: string) => string): string =>
  op.path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(ids(name)));

/** MiniMax's error body (its native routes answer errors in it). */
interface MiniMaxError {
  base_resp?: { status_code: number };
}
const isMiniMaxNative = (op: Operation): boolean => op.tags.includes('minimax');

describe('tenant boundaries', () => {
  let t: TestApp;
  let db: DataSource;
  let mine: Tenant;
  let theirs: Tenant;

  /** The operation with a valid body (from the fuzz fixtures), so only the id or the credential can be at fault. */
  const send = (op: Operation, path: string, authorization: string | null) => {
    let req = t.http[op.method.toLowerCase() as 'get' | 'post' | 'patch' | 'delete'](path);
    if (authorization) req = req.set('Authorization', authorization);
    const body = KNOWN_OPERATIONS[op.key]?.body;
    return op.body?.contentType === 'application/json' ? req.send(body ?? {}) : req;
  };

  beforeAll(async () => {
    t = await startApp({ env: { SVC_WEBHOOK_ALLOW_PRIVATE: 'true' } });
    db = t.app.get(DataSource);
    mine = await makeTenant(t, 'tenant mine');
    theirs = await makeTenant(t, 'tenant theirs');
  });
  afterAll(() => t.close());

  it('has a row operation for consents, recordings, tasks, downloads, webhooks and deliveries', () => {
    const keys = rowOperations.map((op) => op.key);
    for (const path of [
      '/{consent_id}',
      '/{consent_id}/content',
      '/{task_id}',
      '/{task_id}/download',
      '/{webhook_id}',
      '/{webhook_id}/deliveries',
    ]) {
      expect(keys.some((key) => key.endsWith(path))).toBe(true);
    }
  });

  it.each(rowOperations.map((op) => [op.key, op] as const))(
    "%s: another key's id answers 404 exactly like an id that never existed",
    async (_, op) => {
      const foreign = await send(
        op,
        pathFor(op, (name) => ID_OF[name](theirs)),
        `Bearer ${mine.secret}`,
      );
      const missing = await send(
        op,
        pathFor(op, (name) => `${ID_OF[name](theirs).split('_')[0]}_doesnotexist`),
        `Bearer ${mine.secret}`,
      );
      expect(foreign.status).toBe(404);
      expect(foreign.body).toEqual({
        error: {
          message: expect.any(String),
          type: 'not_found_error',
          param: op.pathParams[0].name,
          code: 'resource_not_found',
        },
      });
      expect(missing.status).toBe(404);
      const withoutIds = (body: unknown): string => (body as ErrorBody).error.message.replace(/'[^']*'/g, 'ID');
      expect(withoutIds(foreign.body)).toBe(withoutIds(missing.body));
    },
  );

  it('left the other key’s rows as they were, secret included', async () => {
    const auth = `Bearer ${theirs.secret}`;
    expect(
      (await t.http.get(`/v1/audio/voice_consents/${theirs.consentId}`).set('Authorization', auth)).body,
    ).toMatchObject({ name: 'tenant theirs consent' });
    expect(
      (await t.http.get(`/v1/audio/voice_consents/${theirs.consentId}/content`).set('Authorization', auth)).status,
    ).toBe(200);
    expect((await t.http.get(`/v1/audio/speech/async/${theirs.taskId}`).set('Authorization', auth)).status).toBe(200);
    expect((await t.http.get(`/v1/user/webhooks/${theirs.webhookId}`).set('Authorization', auth)).body).toMatchObject({
      url: 'http://127.0.0.1:9/tenant-theirs',
      enabled: true,
    });
    const deliveries = await t.http.get(`/v1/user/webhooks/${theirs.webhookId}/deliveries`).set('Authorization', auth);
    // mine tried /test on it: nothing was sent in their name
    expect(deliveries.body.data).toEqual([]);
    const [row] = await db.query<Array<{ updated_at: Date; created_at: Date }>>(
      'SELECT created_at, updated_at FROM webhook_endpoints WHERE id = $1',
      [theirs.webhookId],
    );
    expect(row.updated_at.getTime()).toBe(row.created_at.getTime());
  });

  it('lists only the key’s own rows, and refuses another key’s row as a cursor', async () => {
    const auth = `Bearer ${mine.secret}`;
    const consents = await t.http.get('/v1/audio/voice_consents?limit=100').set('Authorization', auth);
    expect((consents.body as ListBody).data.map((c) => c.id)).toEqual([mine.consentId]);
    const hooks = await t.http.get('/v1/user/webhooks?limit=100').set('Authorization', auth);
    expect((hooks.body as ListBody).data.map((w) => w.id)).toEqual([mine.webhookId]);
    for (const [path, id] of [
      ['/v1/audio/voice_consents', theirs.consentId],
      ['/v1/user/webhooks', theirs.webhookId],
    ]) {
      const res = await t.http.get(`${path}?after=${id}`).set('Authorization', auth);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_cursor', param: 'after' });
    }
  });

  it('answers another key’s request id in usage exactly like an unknown one', async () => {
    const auth = `Bearer ${mine.secret}`;
    const own = await t.http.get(`/v1/usage?request_id=${mine.requestId}`).set('Authorization', auth);
    expect(own.body.data).toHaveLength(1);
    const foreign = await t.http.get(`/v1/usage?request_id=${theirs.requestId}`).set('Authorization', auth);
    const unknown = await t.http.get('/v1/usage?request_id=req_doesnotexist').set('Authorization', auth);
    expect(foreign.status).toBe(unknown.status);
    expect(foreign.body).toEqual(unknown.body);
    expect(JSON.stringify(foreign.body)).not.toContain(theirs.requestId);
  });

  it('reports health and voices of the key’s own chain', async () => {
    const echoOnly = await t.createKey('tenant echo only', [{ provider: 'echo', model: 'echo-1' }]);
    const health = await t.http.get('/v1/providers/health').set('Authorization', `Bearer ${echoOnly.secret}`);
    const providers = (body: unknown): string[] =>
      (body as { providers: Array<{ provider: string }> }).providers.map((p) => p.provider);
    expect(providers(health.body)).toEqual(['echo']);
    const voices = await t.http.get('/v1/audio/voices').set('Authorization', `Bearer ${echoOnly.secret}`);
    expect(voices.status).toBe(200);
    expect((voices.body as ListBody).data.filter((v) => v.provider === 'espeak')).toEqual([]);
    const full = await t.http.get('/v1/providers/health').set('Authorization', `Bearer ${mine.secret}`);
    expect(providers(full.body)).toEqual(['echo', 'espeak']);
  });

  it.each(proxyOperations.map((op) => [op.key, op] as const))(
    '%s: no key answers 401, and the admin token is no proxy key',
    async (_, op) => {
      const path = pathFor(op, (name) => (ID_OF[name] ? ID_OF[name](mine) : 'xx_any'));
      const none = await send(op, path, null);
      if (isMiniMaxNative(op)) {
        // MiniMax's own routes refuse as MiniMax does (decisions §10): HTTP 200, base_resp 1004
        expect([none.status, (none.body as MiniMaxError).base_resp?.status_code]).toEqual([200, 1004]);
        const admin = await send(op, path, `Bearer ${ADMIN_TOKEN}`);
        expect([admin.status, (admin.body as MiniMaxError).base_resp?.status_code]).toEqual([200, 1004]);
        return;
      }
      expect(none.status).toBe(401);
      expect(none.body.error).toMatchObject({ type: 'authentication_error', code: 'missing_api_key', param: null });
      const admin = await send(op, path, `Bearer ${ADMIN_TOKEN}`);
      expect(admin.status).toBe(401);
      expect(admin.body.error).toMatchObject({ code: 'invalid_api_key' });
    },
  );

  it.each(adminOperations.map((op) => [op.key, op] as const))(
    '%s: refuses a proxy key (403) and no key (401)',
    async (_, op) => {
      const path = pathFor(op, () => 'pk_any');
      const proxy = await send(op, path, `Bearer ${mine.secret}`);
      expect(proxy.status).toBe(403);
      expect(proxy.body.error).toMatchObject({ type: 'permission_error', code: 'admin_token_required', param: null });
      expect((await send(op, path, null)).status).toBe(401);
    },
  );

  it('refuses a deleted key on its very next request, everywhere, and deletes its consents', async () => {
    const doomed = await makeTenant(t, 'tenant doomed');
    const paths = proxyOperations.map(
      (op) => [op, pathFor(op, (name) => (ID_OF[name] ? ID_OF[name](doomed) : 'xx_any'))] as const,
    );
    expect((await send(paths[0][0], paths[0][1], `Bearer ${doomed.secret}`)).status).toBeLessThan(500);
    await deleteKey(t, ADMIN_TOKEN, doomed.id);
    for (const [op, path] of [...paths, ...adminOperations.map((op) => [op, pathFor(op, () => doomed.id)] as const)]) {
      const res = await send(op, path, `Bearer ${doomed.secret}`);
      if (isMiniMaxNative(op))
        expect([op.key, res.status, (res.body as MiniMaxError).base_resp?.status_code]).toEqual([op.key, 200, 1004]);
      else
        expect([op.key, res.status, (res.body as Partial<ErrorBody>).error?.code]).toEqual([
          op.key,
          401,
          'invalid_api_key',
        ]);
    }
    for (const table of ['voice_consents', 'speech_tasks', 'webhook_endpoints']) {
      const [row] = await db.query<Array<{ n: string }>>(`SELECT count(*) AS n FROM ${table} WHERE key_id = $1`, [
        doomed.id,
      ]);
      expect([table, Number(row.n)]).toEqual([table, 0]);
    }
    const [recording] = await db.query<Array<{ n: string }>>(
      'SELECT count(*) AS n FROM consent_recordings WHERE consent_id = $1',
      [doomed.consentId],
    );
    expect(Number(recording.n)).toBe(0);
  });
});
