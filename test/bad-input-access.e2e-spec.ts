import { tinyWav } from './support/audio';
import { ADMIN_TOKEN } from './support/app';
import { BASE, Case, expectCaseAnswer, list, rename, useBadInputApp } from './support/bad-input';

// Who may see what: list queries, ids (of no consent, of another key's) and credentials.

const CASES: Case[] = [
  // list: query
  {
    what: 'an after cursor that is no consent',
    send: (c) => list(c, 'after=vc_doesnotexist'),
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_cursor',
    param: 'after',
  },
  {
    what: "another key's consent as the after cursor",
    send: (c) => list(c, `after=${c.otherConsentId}`),
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_cursor',
    param: 'after',
  },
  {
    what: 'limit 0',
    send: (c) => list(c, 'limit=0'),
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_value',
    param: 'limit',
  },
  {
    what: 'limit 101',
    send: (c) => list(c, 'limit=101'),
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_value',
    param: 'limit',
  },
  {
    what: 'limit abc',
    send: (c) => list(c, 'limit=abc'),
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_value',
    param: 'limit',
  },
  {
    what: 'limit 2.5',
    send: (c) => list(c, 'limit=2.5'),
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_value',
    param: 'limit',
  },
  {
    what: 'an unknown query parameter',
    send: (c) => list(c, 'order=asc'),
    status: 400,
    type: 'invalid_request_error',
    code: 'unknown_field',
    param: 'order',
  },

  // ids
  {
    what: 'an unknown consent id',
    send: (c) => c.http.get(`${BASE}/vc_doesnotexist`).set('Authorization', c.auth),
    status: 404,
    type: 'not_found_error',
    code: 'resource_not_found',
    param: 'consent_id',
  },
  {
    what: "another key's consent id",
    send: (c) => c.http.get(`${BASE}/${c.otherConsentId}`).set('Authorization', c.auth),
    status: 404,
    type: 'not_found_error',
    code: 'resource_not_found',
    param: 'consent_id',
  },
  {
    what: 'renaming an unknown consent',
    send: (c) => rename(c, { name: 'n' }, 'vc_doesnotexist'),
    status: 404,
    type: 'not_found_error',
    code: 'resource_not_found',
    param: 'consent_id',
  },
  {
    what: 'deleting an unknown consent',
    send: (c) => c.http.delete(`${BASE}/vc_doesnotexist`).set('Authorization', c.auth),
    status: 404,
    type: 'not_found_error',
    code: 'resource_not_found',
    param: 'consent_id',
  },
  {
    what: 'the content of an unknown consent',
    send: (c) => c.http.get(`${BASE}/vc_doesnotexist/content`).set('Authorization', c.auth),
    status: 404,
    type: 'not_found_error',
    code: 'resource_not_found',
    param: 'consent_id',
  },
  {
    what: 'an unknown route',
    send: (c) => c.http.get('/v1/nope').set('Authorization', c.auth),
    status: 404,
    type: 'not_found_error',
    code: 'route_not_found',
    param: null,
  },

  // credentials
  {
    what: 'no Authorization header',
    send: (c) => c.http.get(BASE),
    status: 401,
    type: 'authentication_error',
    code: 'missing_api_key',
    param: null,
  },
  {
    what: 'an Authorization header that is not Bearer',
    send: (c) => c.http.get(BASE).set('Authorization', 'Basic dXNlcjpwYXNz'),
    status: 401,
    type: 'authentication_error',
    code: 'missing_api_key',
    param: null,
  },
  {
    what: 'a wrong API key',
    send: (c) => c.http.get(BASE).set('Authorization', 'Bearer sk-svc-wrongwrongwrongwrongwrongwrongwrong'),
    status: 401,
    type: 'authentication_error',
    code: 'invalid_api_key',
    param: null,
  },
  {
    what: 'no credentials on create',
    send: (c) =>
      c.http.post(BASE).field('language', 'en-US').field('name', 'n').attach('recording', tinyWav(), 'a.wav'),
    status: 401,
    type: 'authentication_error',
    code: 'missing_api_key',
    param: null,
  },
  {
    what: 'a proxy key on the admin API',
    send: (c) => c.http.get('/v1/admin/keys').set('Authorization', c.auth),
    status: 403,
    type: 'permission_error',
    code: 'admin_token_required',
    param: null,
  },
  {
    what: 'a wrong admin token',
    send: (c) => c.http.get('/v1/admin/keys').set('Authorization', 'Bearer not-the-admin-token-at-all'),
    status: 401,
    type: 'authentication_error',
    code: 'invalid_api_key',
    param: null,
  },
  {
    what: 'no credentials on the admin API',
    send: (c) => c.http.get('/v1/admin/keys'),
    status: 401,
    type: 'authentication_error',
    code: 'missing_api_key',
    param: null,
  },
];

describe('bad input: lists, ids and credentials', () => {
  const c = useBadInputApp();

  it.each(CASES)('answers $what with $status $code', (k) => expectCaseAnswer(c, k));

  it('says an admin route needs the admin token when no credential comes (as Swagger UI sends none for a scheme not authorized)', async () => {
    const res = await c.http.get('/v1/admin/keys');
    expect(res.status).toBe(401);
    expect(res.body.error).toMatchObject({
      code: 'missing_api_key',
      message: expect.stringContaining('needs the admin token'),
    });
    const proxy = await c.http.get(BASE);
    expect(proxy.body.error.message).toMatch(/^Missing API key/);
  });

  it("answers another key's consent id exactly as an id that never existed", async () => {
    const foreign = await c.http.get(`${BASE}/${c.otherConsentId}`).set('Authorization', c.auth);
    const unknownId = `vc_${'x'.repeat(c.otherConsentId.length - 3)}`;
    const unknown = await c.http.get(`${BASE}/${unknownId}`).set('Authorization', c.auth);
    expect(foreign.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(foreign.body).toEqual(JSON.parse(JSON.stringify(unknown.body).split(unknownId).join(c.otherConsentId)));
  });

  it('tells a caller with a wrong admin token that the admin token is wrong', async () => {
    const ok = await c.http.get('/v1/admin/keys').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(ok.status).toBe(200);
    const wrong = await c.http.get('/v1/admin/keys').set('Authorization', c.otherAuth.replace(/.$/, '_'));
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.message).toMatch(/admin token/i);
  });
});
