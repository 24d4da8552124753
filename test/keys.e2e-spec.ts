import type { Response } from 'supertest';
import { isDeepStrictEqual } from 'node:util';
import type { ChainStepDto } from '../src/config/chain-step.dto';
import { Client } from 'pg';
import { hashSecret, KeyDirectory } from '../src/keys/key-directory';
import { KeysRepository } from '../src/keys/keys.repository';
import { KeysService } from '../src/keys/keys.service';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';

const ADMIN = `Bearer ${ADMIN_TOKEN}`;
const KEYS = '/v1/admin/keys';
const ECHO_CHAIN: ChainStepDto[] = [{ provider: 'echo', model: 'echo-1' }];

interface ProxyKey {
  id: string;
  object: string;
  name: string;
  chain: ChainStepDto[];
  created_at: number;
  secret?: string;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` every 50 ms until it holds; returns the milliseconds it took, or throws after `limitMs`. */
async function within(limitMs: number, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > limitMs) throw new Error(`condition still false after ${limitMs} ms`);
    await sleep(50);
  }
}

const errorBody = (type: string, code: string, param: string | null): object => ({
  error: { message: expect.any(String), type, param, code },
});

describe('admin API: proxy keys', () => {
  let t: TestApp;
  const authenticates = async (app: TestApp, secret: string): Promise<number> =>
    (await app.http.get('/v1/audio/voice_consents').set('Authorization', `Bearer ${secret}`)).status;
  const createKey = (body: object): Promise<Response> => t.http.post(KEYS).set('Authorization', ADMIN).send(body);

  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  it('creates a key and shows its secret once, in the 201 answer', async () => {
    const before = Math.floor(Date.now() / 1000);
    const res = await createKey({ name: 'tenant a', chain: ECHO_CHAIN });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^pk_[0-9A-Za-z]+$/),
      object: 'proxy_key',
      name: 'tenant a',
      chain: ECHO_CHAIN,
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
      secret_hint: expect.any(String),
      secret: expect.stringMatching(/^sk-svc-[0-9A-Za-z]{32,}$/),
    });
    const key = res.body as ProxyKey & { secret: string; secret_hint: string };
    expect(Number.isInteger(key.created_at)).toBe(true);
    expect(key.created_at).toBeGreaterThanOrEqual(before - 1);
    expect(key.secret.endsWith(key.secret_hint)).toBe(true);
  });

  it('authenticates a new secret on the very next request', async () => {
    const { secret } = await t.createKey('instant');
    expect(await authenticates(t, secret)).toBe(200);
  });

  it('never shows a secret in the list or on retrieve', async () => {
    const created = (await createKey({ name: 'hidden secret', chain: ECHO_CHAIN })).body as ProxyKey & {
      secret: string;
    };
    const got = await t.http.get(`${KEYS}/${created.id}`).set('Authorization', ADMIN);
    expect(got.status).toBe(200);
    expect(got.body).not.toHaveProperty('secret');
    const { secret, ...withoutSecret } = created;
    expect(got.body).toEqual(withoutSecret);
    expect(JSON.stringify(got.body)).not.toContain(secret);

    const listed = await t.http.get(KEYS).set('Authorization', ADMIN);
    expect(listed.status).toBe(200);
    expect(listed.body.object).toBe('list');
    const keys = listed.body.data as ProxyKey[];
    expect(keys.map((k) => k.id)).toContain(created.id);
    for (const key of keys) expect(key).not.toHaveProperty('secret');
    expect(JSON.stringify(listed.body)).not.toContain(secret);
    expect(JSON.stringify(listed.body)).not.toMatch(/sk-svc-/);
  });

  it('renames a key and replaces its chain with PATCH', async () => {
    const { id } = await t.createKey('before rename');
    const renamed = await t.http.patch(`${KEYS}/${id}`).set('Authorization', ADMIN).send({ name: 'after rename' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ id, name: 'after rename', chain: ECHO_CHAIN });

    const chain: ChainStepDto[] = [
      { provider: 'espeak', model: 'speech-02-hd', timeout_ms: 5000, voice_map: { '*': 'en' } },
      { provider: 'echo', model: 'echo-1', usage_cap: { requests: 10, per: 'minute' } },
    ];
    const rechained = await t.http.patch(`${KEYS}/${id}`).set('Authorization', ADMIN).send({ chain });
    expect(rechained.status).toBe(200);
    expect(rechained.body).toMatchObject({ id, name: 'after rename', chain });

    const got = await t.http.get(`${KEYS}/${id}`).set('Authorization', ADMIN);
    expect(got.body).toMatchObject({ name: 'after rename', chain });
  });

  it('answers a PATCH with nothing to change with the key unchanged', async () => {
    const { id } = await t.createKey('untouched');
    const before = await t.http.get(`${KEYS}/${id}`).set('Authorization', ADMIN);
    const res = await t.http.patch(`${KEYS}/${id}`).set('Authorization', ADMIN).send({});
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...before.body, updated_at: expect.any(Number) });
  });

  it('refuses a chain step with an unknown provider, naming the step', async () => {
    const res = await createKey({
      name: 'bad chain',
      chain: [...ECHO_CHAIN, { provider: 'nosuchprovider', model: 'm' }],
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorBody('invalid_request_error', 'unknown_provider', 'chain[1].provider'));

    const { id } = await t.createKey('patched with a bad chain');
    const patched = await t.http
      .patch(`${KEYS}/${id}`)
      .set('Authorization', ADMIN)
      .send({ chain: [{ provider: 'nosuchprovider', model: 'm' }] });
    expect(patched.status).toBe(400);
    expect(patched.body).toEqual(errorBody('invalid_request_error', 'unknown_provider', 'chain[0].provider'));
  });

  it('refuses a chain step without a model, naming the field', async () => {
    const res = await createKey({ name: 'no model', chain: [{ provider: 'echo' }] });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorBody('invalid_request_error', 'missing_field', 'chain[0].model'));
  });

  it('refuses an unknown field inside a chain step, naming it', async () => {
    const res = await createKey({ name: 'extra', chain: [{ provider: 'echo', model: 'echo-1', weight: 3 }] });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorBody('invalid_request_error', 'unknown_field', 'chain[0].weight'));
  });

  it('refuses a usage cap with an unknown window, naming the field', async () => {
    const res = await createKey({
      name: 'cap',
      chain: [{ provider: 'echo', model: 'echo-1', usage_cap: { requests: 1, per: 'week' } }],
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorBody('invalid_request_error', 'invalid_value', 'chain[0].usage_cap.per'));
  });

  it('refuses a key without a name or chain', async () => {
    expect((await createKey({ chain: ECHO_CHAIN })).body).toEqual(
      errorBody('invalid_request_error', 'missing_field', 'name'),
    );
    expect((await createKey({ name: 'no chain' })).body).toEqual(
      errorBody('invalid_request_error', 'missing_field', 'chain'),
    );
  });

  it('refuses an empty chain on create and on PATCH, and leaves the key as it was', async () => {
    const refused = errorBody('invalid_request_error', 'invalid_value', 'chain');
    const created = await createKey({ name: 'no steps', chain: [] });
    expect(created.status).toBe(400);
    expect(created.body).toEqual(refused);
    expect(created.body.error.message).toMatch(/at least one step/);
    const { id } = await t.createKey('emptied');
    const patched = await t.http
      .patch(`${KEYS}/${id}`)
      .set('Authorization', ADMIN)
      .send({ name: 'emptied again', chain: [] });
    expect(patched.status).toBe(400);
    expect(patched.body).toEqual(refused);
    expect((await t.http.get(`${KEYS}/${id}`).set('Authorization', ADMIN)).body).toMatchObject({
      name: 'emptied',
      chain: ECHO_CHAIN,
    });
    // the service itself (what the CLI and the bootstrap keys call) refuses it as well
    const service = t.app.get(KeysService);
    await expect(service.create('no steps', [])).rejects.toMatchObject({ code: 'invalid_value', param: 'chain' });
    await expect(service.update(id, { chain: [] })).rejects.toMatchObject({ code: 'invalid_value', param: 'chain' });
  });

  it('answers 404 for an unknown key id', async () => {
    for (const res of [
      await t.http.get(`${KEYS}/pk_unknown`).set('Authorization', ADMIN),
      await t.http.patch(`${KEYS}/pk_unknown`).set('Authorization', ADMIN).send({ name: 'x' }),
      await t.http.delete(`${KEYS}/pk_unknown`).set('Authorization', ADMIN),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual(errorBody('not_found_error', 'resource_not_found', 'key_id'));
    }
  });

  it('deletes a key, whose secret gets 401 on the very next request', async () => {
    const { id, secret } = await t.createKey('doomed');
    expect(await authenticates(t, secret)).toBe(200);
    const res = await t.http.delete(`${KEYS}/${id}`).set('Authorization', ADMIN);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id, object: 'proxy_key', deleted: true });
    const next = await t.http.get('/v1/audio/voice_consents').set('Authorization', `Bearer ${secret}`);
    expect(next.status).toBe(401);
    expect(next.body).toEqual(errorBody('authentication_error', 'invalid_api_key', null));
    expect((await t.http.get(`${KEYS}/${id}`).set('Authorization', ADMIN)).status).toBe(404);
  });

  describe('without SVC_ADMIN_TOKEN', () => {
    let off: TestApp;
    beforeAll(async () => {
      off = await startApp({ env: { SVC_ADMIN_TOKEN: undefined } });
    });
    afterAll(() => off.close());

    it('refuses every admin request with 403 admin_api_disabled', async () => {
      const { secret } = await t.createKey('proxy key on a disabled admin API');
      for (const res of [
        await off.http.get(KEYS),
        await off.http.get(KEYS).set('Authorization', ADMIN),
        await off.http.post(KEYS).set('Authorization', ADMIN).send({ name: 'x', chain: ECHO_CHAIN }),
        await off.http.get(KEYS).set('Authorization', `Bearer ${secret}`),
      ]) {
        expect(res.status).toBe(403);
        expect(res.body).toEqual(errorBody('permission_error', 'admin_api_disabled', null));
        expect(res.headers['x-svc-request-id']).toMatch(/^req_/);
      }
    });

    it('still serves proxy keys', async () => {
      const { secret } = await t.createKey('served by the other replica');
      expect(await authenticates(off, secret)).toBe(200);
    });
  });
});

describe('proxy keys across replicas', () => {
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    // The production poll interval (1 s): the bounds below hold through NOTIFY, not a fast test poll.
    const env = { SVC_SYNC_INTERVAL_MS: undefined };
    a = await startApp({ env });
    b = await startApp({ env });
  });
  afterAll(async () => {
    await a.close();
    await b.close();
  });

  const status = async (app: TestApp, secret: string): Promise<number> =>
    (await app.http.get('/v1/audio/voice_consents').set('Authorization', `Bearer ${secret}`)).status;

  it('authenticates a key made on replica A on replica B at the next request', async () => {
    const { secret } = await a.createKey('made on a');
    expect(await status(b, secret)).toBe(200);
  });

  it('refuses on B, within 1.5 s, a key deleted through A', async () => {
    const { id, secret } = await a.createKey('deleted on a');
    expect(await status(b, secret)).toBe(200);
    const deleted = await a.http.delete(`/v1/admin/keys/${id}`).set('Authorization', ADMIN);
    expect(deleted.status).toBe(200);
    expect(await status(a, secret)).toBe(401);
    const took = await within(1500, async () => (await status(b, secret)) === 401);
    expect(took).toBeLessThanOrEqual(1500);
    expect(await status(b, secret)).toBe(401);
  });

  /** A key B has not loaded (written straight to the table, as a missed NOTIFY would leave it). */
  const insertUnannounced = async (id: string, secret: string): Promise<void> => {
    const db = new Client({ connectionString: process.env.DATABASE_URL });
    await db.connect();
    try {
      await db.query(
        `INSERT INTO proxy_keys (id, name, secret_hash, secret_hint, chain) VALUES ($1, $1, $2, 'xxxx', $3)`,
        [id, hashSecret(secret), JSON.stringify(ECHO_CHAIN)],
      );
    } finally {
      await db.end();
    }
  };

  it('authenticates on its first request a key whose change notice B never got', async () => {
    const secret = `sk-svc-${'M'.repeat(40)}`;
    await insertUnannounced('pk_missednoticemissednotice', secret);
    expect(await status(b, secret)).toBe(200);
  });

  it('refuses on B a key deleted through A while B was reloading its keys', async () => {
    const secret = `sk-svc-${'L'.repeat(40)}`;
    const id = 'pk_lookupracelookupracelook';
    const repository = b.app.get(KeysRepository);
    const findAll = repository.findAll.bind(repository);
    let raced = false;
    // the first reload after the key appears (its periodic poll's, or the one its first request asks for)
    const spy = jest.spyOn(repository, 'findAll').mockImplementationOnce(async () => {
      raced = true;
      const rows = await findAll();
      // the key is deleted, and B hears of it, before B's reload answers
      expect((await a.http.delete(`/v1/admin/keys/${id}`).set('Authorization', ADMIN)).status).toBe(200);
      await sleep(300);
      return rows;
    });
    try {
      await insertUnannounced(id, secret);
      await status(b, secret);
      await within(3000, () => Promise.resolve(raced));
      // the reload queued behind the raced one (by the deletion's notice, or the next poll) has read the
      // table: from then on B must refuse the key (on a busy machine it may not have finished yet here)
      await within(3000, () => Promise.resolve(spy.mock.calls.length >= 2));
      await spy.mock.results[spy.mock.results.length - 1].value;
      await sleep(20);
    } finally {
      spy.mockRestore();
    }
    expect(await status(b, secret)).toBe(401);
  });

  it('answers a flood of unknown secrets with 401 and a handful of queries, not one per secret', async () => {
    // B in step with the table first: the keys the tests before changed are reloaded
    expect(await status(b, `sk-svc-settle${'u'.repeat(30)}`)).toBe(401);
    const repository = b.app.get(KeysRepository);
    const signature = jest.spyOn(repository, 'signature');
    const findAll = jest.spyOn(repository, 'findAll');
    try {
      const statuses = await Promise.all(
        Array.from({ length: 300 }, (_, i) => status(b, `sk-svc-unknown${i}${'u'.repeat(30)}`)),
      );
      expect(statuses.every((s) => s === 401)).toBe(true);
      // the 300 arrive within a few hundred ms: they share a check every 200 ms (plus the periodic poll)
      expect(signature.mock.calls.length).toBeLessThanOrEqual(8);
      expect(findAll).not.toHaveBeenCalled();
    } finally {
      signature.mockRestore();
      findAll.mockRestore();
    }
  });

  it('applies on B, within 1.5 s, a chain change made through A', async () => {
    const { id, secret } = await a.createKey('rechained on a', ECHO_CHAIN);
    const directory = b.app.get(KeyDirectory);
    expect((await directory.authenticate(secret))?.chain).toEqual(ECHO_CHAIN);

    const chain: ChainStepDto[] = [
      { provider: 'espeak', model: 'speech-02-hd' },
      { provider: 'echo', model: 'echo-2' },
    ];
    const patched = await a.http.patch(`/v1/admin/keys/${id}`).set('Authorization', ADMIN).send({ chain });
    expect(patched.status).toBe(200);
    expect((await a.app.get(KeyDirectory).authenticate(secret))?.chain).toEqual(chain);
    const took = await within(1500, async () =>
      isDeepStrictEqual((await directory.authenticate(secret))?.chain, chain),
    );
    expect(took).toBeLessThanOrEqual(1500);
  });
});
