import { Client } from 'pg';
import type { Response } from 'supertest';
import { tinyWav } from './support/audio';
import { startApp, TestApp } from './support/app';

interface Consent {
  id: string;
  created_at: number;
  language: string;
  name: string;
  object: string;
}

interface ConsentList {
  object: string;
  data: Consent[];
  has_more: boolean;
  first_id: string | null;
  last_id: string | null;
}

const BASE = '/v1/audio/voice_consents';

describe('voice consents', () => {
  let t: TestApp;
  const bearer = (secret: string): string => `Bearer ${secret}`;

  const upload = (
    secret: string,
    fields: { name?: string; language?: string } = {},
    file: { bytes?: Buffer; filename?: string } = {},
  ): Promise<Response> =>
    t.http
      .post(BASE)
      .set('Authorization', bearer(secret))
      .field('language', fields.language ?? 'en-US')
      .field('name', fields.name ?? 'consent')
      .attach('recording', file.bytes ?? tinyWav(), file.filename ?? 'consent.wav');

  async function createConsent(secret: string, name = 'consent'): Promise<Consent> {
    const res = await upload(secret, { name });
    if (res.status !== 200) throw new Error(`consent creation failed: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as Consent;
  }

  const list = async (secret: string, query: Record<string, string | number> = {}): Promise<ConsentList> => {
    const res = await t.http.get(BASE).query(query).set('Authorization', bearer(secret));
    expect(res.status).toBe(200);
    return res.body as ConsentList;
  };

  /** Follows `after` = `last_id` until `has_more` is false; returns the pages. */
  async function walk(secret: string, limit: number): Promise<ConsentList[]> {
    const pages: ConsentList[] = [];
    let after: string | null = null;
    for (let i = 0; i < 100; i++) {
      const page = await list(secret, after ? { limit, after } : { limit });
      pages.push(page);
      if (!page.has_more) return pages;
      after = page.last_id;
    }
    throw new Error('pagination did not end');
  }

  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  describe('one consent', () => {
    let secret: string;
    beforeAll(async () => {
      ({ secret } = await t.createKey('consents owner'));
    });

    it('creates a consent and answers with its exact shape, language canonicalised', async () => {
      const before = Math.floor(Date.now() / 1000);
      const res = await upload(secret, { name: 'My consent', language: 'en-us' });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toEqual({
        id: expect.stringMatching(/^vc_[0-9A-Za-z]+$/),
        created_at: expect.any(Number),
        language: 'en-US',
        name: 'My consent',
        object: 'audio.voice_consent',
      });
      const created = res.body as Consent;
      expect(Number.isInteger(created.created_at)).toBe(true);
      expect(created.created_at).toBeGreaterThanOrEqual(before - 1);
      expect(created.created_at).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 1);
    });

    it('retrieves a consent as it was created', async () => {
      const created = await createConsent(secret, 'to retrieve');
      const res = await t.http.get(`${BASE}/${created.id}`).set('Authorization', bearer(secret));
      expect(res.status).toBe(200);
      expect(res.body).toEqual(created);
    });

    it('renames a consent and keeps every other field', async () => {
      const created = await createConsent(secret, 'old name');
      const res = await t.http
        .post(`${BASE}/${created.id}`)
        .set('Authorization', bearer(secret))
        .send({ name: 'new name' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ...created, name: 'new name' });
      const again = await t.http.get(`${BASE}/${created.id}`).set('Authorization', bearer(secret));
      expect(again.body).toEqual({ ...created, name: 'new name' });
    });

    it('refuses a rename body with fields other than name, naming the field', async () => {
      const created = await createConsent(secret, 'fixed');
      const res = await t.http
        .post(`${BASE}/${created.id}`)
        .set('Authorization', bearer(secret))
        .send({ name: 'x', language: 'fr-FR' });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: { message: expect.any(String), type: 'invalid_request_error', param: 'language', code: 'unknown_field' },
      });
      const unchanged = await t.http.get(`${BASE}/${created.id}`).set('Authorization', bearer(secret));
      expect(unchanged.body).toEqual(created);
    });

    it('deletes a consent, after which it is not found', async () => {
      const created = await createConsent(secret, 'to delete');
      const res = await t.http.delete(`${BASE}/${created.id}`).set('Authorization', bearer(secret));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: created.id, deleted: true, object: 'audio.voice_consent' });

      const retrieve = await t.http.get(`${BASE}/${created.id}`).set('Authorization', bearer(secret));
      expect(retrieve.status).toBe(404);
      expect(retrieve.body.error).toMatchObject({ type: 'not_found_error' });
      const content = await t.http.get(`${BASE}/${created.id}/content`).set('Authorization', bearer(secret));
      expect(content.status).toBe(404);
      const twice = await t.http.delete(`${BASE}/${created.id}`).set('Authorization', bearer(secret));
      expect(twice.status).toBe(404);
    });

    it('returns the exact uploaded bytes with the type sniffed from them, not the file name', async () => {
      const wav = tinyWav(4000, 16000);
      const created = await upload(secret, { name: 'bytes' }, { bytes: wav, filename: 'x.txt' });
      expect(created.status).toBe(200);
      const res = await t.http
        .get(`${BASE}/${(created.body as Consent).id}/content`)
        .set('Authorization', bearer(secret))
        .buffer(true)
        .parse((r, done) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => done(null, Buffer.concat(chunks)));
        });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('audio/wav');
      expect(res.headers['content-length']).toBe(String(wav.length));
      // a download with a name (named by the id and the sniffed type, never the uploaded file name)
      expect(res.headers['content-disposition']).toBe(`attachment; filename="${(created.body as Consent).id}.wav"`);
      expect(Buffer.compare(res.body as Buffer, wav)).toBe(0);
    });
  });

  describe('listing', () => {
    it('lists an empty page with null ids when a key has no consents', async () => {
      const { secret } = await t.createKey('empty lister');
      expect(await list(secret)).toEqual({ object: 'list', data: [], has_more: false, first_id: null, last_id: null });
    });

    describe('25 consents under one key', () => {
      let secret: string;
      /** Newest first. */
      let expected: Consent[];
      beforeAll(async () => {
        ({ secret } = await t.createKey('lister'));
        const created: Consent[] = [];
        for (let i = 0; i < 25; i++) created.push(await createConsent(secret, `consent ${i}`));
        expected = created.reverse();
      });

      it('lists newest first, 20 by default, with has_more and first/last ids', async () => {
        const page = await list(secret);
        expect(page.object).toBe('list');
        expect(page.data).toHaveLength(20);
        expect(page.data).toEqual(expected.slice(0, 20));
        expect(page.has_more).toBe(true);
        expect(page.first_id).toBe(expected[0].id);
        expect(page.last_id).toBe(expected[19].id);
      });

      it('ends with has_more false on the last page', async () => {
        const page = await list(secret, { after: expected[19].id });
        expect(page.data).toEqual(expected.slice(20));
        expect(page.has_more).toBe(false);
        expect(page.first_id).toBe(expected[20].id);
        expect(page.last_id).toBe(expected[24].id);
      });

      it('reports has_more false when a page ends exactly at the last consent', async () => {
        const page = await list(secret, { limit: 25 });
        expect(page.data).toEqual(expected);
        expect(page.has_more).toBe(false);
      });

      it('pages 25 consents with no repeats or gaps', async () => {
        const pages = await walk(secret, 7);
        expect(pages.map((p) => p.data.length)).toEqual([7, 7, 7, 4]);
        expect(pages.flatMap((p) => p.data.map((c) => c.id))).toEqual(expected.map((c) => c.id));
        for (const page of pages) {
          expect(page.first_id).toBe(page.data[0].id);
          expect(page.last_id).toBe(page.data[page.data.length - 1].id);
        }
      });

      it('pages stably through consents created in the same millisecond', async () => {
        // Give every consent of this key one identical timestamp: only the tie-break orders them.
        const db = new Client({ connectionString: process.env.DATABASE_URL });
        await db.connect();
        try {
          await db.query(
            `UPDATE voice_consents SET created_at = date_trunc('milliseconds', now()) WHERE id = ANY($1::text[])`,
            [expected.map((c) => c.id)],
          );
        } finally {
          await db.end();
        }
        const first = (await walk(secret, 4)).flatMap((p) => p.data.map((c) => c.id));
        const second = (await walk(secret, 6)).flatMap((p) => p.data.map((c) => c.id));
        expect(first).toHaveLength(25);
        expect(new Set(first).size).toBe(25);
        expect(new Set(first)).toEqual(new Set(expected.map((c) => c.id)));
        expect(second).toEqual(first);
        // Same instant: the one created later is still listed first.
        expect(first).toEqual(expected.map((c) => c.id));
      });

      it('pages with no repeats or gaps through consents created concurrently', async () => {
        const { secret: other } = await t.createKey('concurrent lister');
        const created = await Promise.all(Array.from({ length: 25 }, (_, i) => createConsent(other, `parallel ${i}`)));
        const ids = (await walk(other, 5)).flatMap((p) => p.data.map((c) => c.id));
        expect(ids).toHaveLength(25);
        expect(new Set(ids)).toEqual(new Set(created.map((c) => c.id)));
      });
    });
  });

  describe('isolation between keys', () => {
    let owner: string;
    let stranger: string;
    let consent: Consent;
    beforeAll(async () => {
      ({ secret: owner } = await t.createKey('owner'));
      ({ secret: stranger } = await t.createKey('stranger'));
      consent = await createConsent(owner, 'private');
      await createConsent(stranger, 'the stranger’s own');
    });

    const expectNotFound = (res: Response): void => {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({
        error: { message: expect.any(String), type: 'not_found_error', param: 'consent_id', code: expect.any(String) },
      });
    };

    it('answers 404 when another key retrieves, renames, deletes or downloads a consent', async () => {
      expectNotFound(await t.http.get(`${BASE}/${consent.id}`).set('Authorization', bearer(stranger)));
      expectNotFound(
        await t.http.post(`${BASE}/${consent.id}`).set('Authorization', bearer(stranger)).send({ name: 'stolen' }),
      );
      expectNotFound(await t.http.delete(`${BASE}/${consent.id}`).set('Authorization', bearer(stranger)));
      expectNotFound(await t.http.get(`${BASE}/${consent.id}/content`).set('Authorization', bearer(stranger)));

      const still = await t.http.get(`${BASE}/${consent.id}`).set('Authorization', bearer(owner));
      expect(still.status).toBe(200);
      expect(still.body).toEqual(consent);
    });

    it("leaves another key's consents out of a list", async () => {
      const page = await list(stranger, { limit: 100 });
      expect(page.data.map((c) => c.id)).not.toContain(consent.id);
      expect(page.data.map((c) => c.name)).toEqual(['the stranger’s own']);
    });

    it("refuses another key's consent id as the after cursor", async () => {
      const res = await t.http.get(BASE).query({ after: consent.id }).set('Authorization', bearer(stranger));
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: { message: expect.any(String), type: 'invalid_request_error', param: 'after', code: 'invalid_cursor' },
      });
    });
  });
});
