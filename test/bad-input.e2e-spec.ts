import type { Test } from 'supertest';
import { notAudio, tinyWav } from './support/audio';
import { ADMIN_TOKEN, startApp, TestApp } from './support/app';

const BASE = '/v1/audio/voice_consents';
const MiB = 1024 * 1024;

interface Context {
  http: TestApp['http'];
  /** `Authorization` value of the key that owns `consentId`. */
  auth: string;
  /** `Authorization` value of another key. */
  otherAuth: string;
  consentId: string;
  otherConsentId: string;
}

interface Case {
  what: string;
  send: (c: Context) => Test;
  status: number;
  type: string;
  code: string;
  param: string | null;
}

/** A multipart upload with every part valid unless the case overrides or leaves one out. */
function upload(
  c: Context,
  parts: {
    language?: string | null;
    name?: string | null;
    recording?: Buffer | null;
    filename?: string;
    extra?: Record<string, string>;
  } = {},
): Test {
  let req = c.http.post(BASE).set('Authorization', c.auth);
  if (parts.language !== null) req = req.field('language', parts.language ?? 'en-US');
  if (parts.name !== null) req = req.field('name', parts.name ?? 'consent');
  for (const [field, value] of Object.entries(parts.extra ?? {})) req = req.field(field, value);
  if (parts.recording !== null)
    req = req.attach('recording', parts.recording ?? tinyWav(), parts.filename ?? 'consent.wav');
  return req;
}

const rename = (c: Context, body: string | object, id = c.consentId): Test =>
  c.http.post(`${BASE}/${id}`).set('Authorization', c.auth).set('Content-Type', 'application/json').send(body);

const list = (c: Context, query: string): Test => c.http.get(`${BASE}?${query}`).set('Authorization', c.auth);

const oversizeWav = (): Buffer => Buffer.concat([tinyWav(), Buffer.alloc(10 * MiB)]);

const CASES: Case[] = [
  // create: multipart form
  {
    what: 'an upload without the recording file',
    send: (c) => upload(c, { recording: null }),
    status: 400,
    type: 'invalid_request_error',
    code: 'missing_field',
    param: 'recording',
  },
  {
    what: 'an upload without a name',
    send: (c) => upload(c, { name: null }),
    status: 400,
    type: 'invalid_request_error',
    code: 'missing_field',
    param: 'name',
  },
  {
    what: 'an upload without a language',
    send: (c) => upload(c, { language: null }),
    status: 400,
    type: 'invalid_request_error',
    code: 'missing_field',
    param: 'language',
  },
  {
    what: 'an upload with an unknown text field',
    send: (c) => upload(c, { extra: { voice: 'alloy' } }),
    status: 400,
    type: 'invalid_request_error',
    code: 'unknown_field',
    param: 'voice',
  },
  {
    what: 'an upload with the file under an unknown field',
    send: (c) =>
      c.http
        .post(BASE)
        .set('Authorization', c.auth)
        .field('language', 'en-US')
        .field('name', 'n')
        .attach('audio', tinyWav(), 'a.wav'),
    status: 400,
    type: 'invalid_request_error',
    code: 'unknown_field',
    param: 'audio',
  },
  {
    what: 'an upload with the recording as a text field, not a file',
    send: (c) =>
      c.http
        .post(BASE)
        .set('Authorization', c.auth)
        .field('language', 'en-US')
        .field('name', 'n')
        .field('recording', 'consent.wav'),
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_value',
    param: 'recording',
  },
  {
    what: 'an upload with two recording files',
    send: (c) => upload(c).attach('recording', tinyWav(), 'second.wav'),
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_value',
    param: 'recording',
  },
  {
    what: 'an upload with a 257-character name',
    send: (c) => upload(c, { name: 'n'.repeat(257) }),
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_value',
    param: 'name',
  },
  {
    what: 'an upload with an empty name',
    send: (c) => upload(c, { name: '' }),
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_value',
    param: 'name',
  },
  {
    what: 'an upload with a tag that is not BCP 47',
    send: (c) => upload(c, { language: 'en_US!!' }),
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_value',
    param: 'language',
  },
  {
    what: 'a recording over 10 MiB',
    send: (c) => upload(c, { recording: oversizeWav() }),
    status: 413,
    type: 'invalid_request_error',
    code: 'file_too_large',
    param: 'recording',
  },
  {
    what: 'a non-audio file named like audio',
    send: (c) => upload(c, { recording: notAudio(), filename: 'consent.wav' }),
    status: 415,
    type: 'invalid_request_error',
    code: 'unsupported_media_type',
    param: 'recording',
  },
  {
    what: 'an empty recording file',
    send: (c) => upload(c, { recording: Buffer.alloc(0) }),
    status: 415,
    type: 'invalid_request_error',
    code: 'unsupported_media_type',
    param: 'recording',
  },
  {
    what: 'a JSON body instead of multipart on create',
    send: (c) =>
      c.http.post(BASE).set('Authorization', c.auth).send({ name: 'n', language: 'en-US', recording: 'UklGRg==' }),
    status: 415,
    type: 'invalid_request_error',
    code: 'unsupported_media_type',
    param: null,
  },
  {
    what: 'a multipart body without a boundary',
    send: (c) =>
      c.http.post(BASE).set('Authorization', c.auth).set('Content-Type', 'multipart/form-data').send('garbage'),
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_value',
    param: null,
  },

  // rename: JSON body
  {
    what: 'a rename with the name as a number',
    send: (c) => rename(c, { name: 42 }),
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_value',
    param: 'name',
  },
  {
    what: 'a rename without a name',
    send: (c) => rename(c, {}),
    status: 400,
    type: 'invalid_request_error',
    code: 'missing_field',
    param: 'name',
  },
  {
    what: 'a rename with a null name',
    send: (c) => rename(c, { name: null }),
    status: 400,
    type: 'invalid_request_error',
    code: 'missing_field',
    param: 'name',
  },
  {
    what: 'a rename with an empty name',
    send: (c) => rename(c, { name: '' }),
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_value',
    param: 'name',
  },
  {
    what: 'a rename with a 257-character name',
    send: (c) => rename(c, { name: 'n'.repeat(257) }),
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_value',
    param: 'name',
  },
  {
    what: 'a rename with another field',
    send: (c) => rename(c, { name: 'n', language: 'de' }),
    status: 400,
    type: 'invalid_request_error',
    code: 'unknown_field',
    param: 'language',
  },
  {
    what: 'a rename with malformed JSON',
    send: (c) => rename(c, '{"name": "x",'),
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_json',
    param: null,
  },
  {
    what: 'a JSON body over 1 MiB',
    send: (c) => rename(c, { name: 'n'.repeat(MiB + 16) }),
    status: 413,
    type: 'invalid_request_error',
    code: 'body_too_large',
    param: null,
  },
  {
    what: 'a rename sent as a multipart form',
    send: (c) => c.http.post(`${BASE}/${c.consentId}`).set('Authorization', c.auth).field('name', 'n'),
    status: 415,
    type: 'invalid_request_error',
    code: 'unsupported_media_type',
    param: null,
  },
  {
    what: 'a webhook sent as a multipart form',
    send: (c) => c.http.post('/v1/user/webhooks').set('Authorization', c.auth).field('url', 'https://example.com/hook'),
    status: 415,
    type: 'invalid_request_error',
    code: 'unsupported_media_type',
    param: null,
  },
  {
    what: 'speech asked for with a multipart form',
    send: (c) =>
      c.http.post('/v1/audio/speech').set('Authorization', c.auth).field('model', 'speech-02-hd').field('text', 'hi'),
    status: 415,
    type: 'invalid_request_error',
    code: 'unsupported_media_type',
    param: null,
  },

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

interface MessageCase {
  what: string;
  send: (c: Context) => Test;
  code: string;
  param: string | null;
  /** What the message must say (the rule the value breaks first: its type before its range or length). */
  says: RegExp;
}

const json = (c: Context, method: 'post' | 'patch', path: string, body: string | object, auth = c.auth): Test =>
  c.http[method](path).set('Authorization', auth).set('Content-Type', 'application/json').send(body);
const ADMIN = `Bearer ${ADMIN_TOKEN}`;
const VOICE = { voice_id: 'en' };
const SPEECH = { model: 'speech-02-hd', text: 'hello', voice_setting: VOICE };
const NOT_OBJECT = /^The request body must be a JSON object\.$/;

const MESSAGE_CASES: MessageCase[] = [
  // a value of the wrong type breaks its length or range rules as well: the message names the type
  {
    what: 'speech text as a number',
    send: (c) => json(c, 'post', '/v1/audio/speech', { ...SPEECH, text: 123 }),
    code: 'invalid_value',
    param: 'text',
    says: /text must be a string/,
  },
  {
    what: 'a MiniMax speed as a word',
    send: (c) => json(c, 'post', '/v1/audio/speech', { ...SPEECH, voice_setting: { ...VOICE, speed: 'fast' } }),
    code: 'invalid_value',
    param: 'voice_setting.speed',
    says: /speed must be a number/,
  },
  {
    what: 'an OpenAI speed as a word',
    send: (c) =>
      json(c, 'post', '/v1/audio/speech', { model: 'speech-02-hd', input: 'hi', voice: 'en', speed: 'fast' }),
    code: 'invalid_value',
    param: 'speed',
    says: /speed must be a number/,
  },
  {
    what: 'a pitch as a string',
    send: (c) => json(c, 'post', '/v1/audio/speech', { ...SPEECH, voice_setting: { ...VOICE, pitch: '3' } }),
    code: 'invalid_value',
    param: 'voice_setting.pitch',
    says: /pitch must be an integer/,
  },
  {
    what: 'voice_setting as a number',
    send: (c) => json(c, 'post', '/v1/audio/speech', { ...SPEECH, voice_setting: 5 }),
    code: 'invalid_value',
    param: 'voice_setting',
    says: /voice_setting must be an object/,
  },
  {
    what: 'a consent name as a number',
    send: (c) => rename(c, { name: 5 }),
    code: 'invalid_value',
    param: 'name',
    says: /name must be a string/,
  },
  {
    what: 'limit abc',
    send: (c) => list(c, 'limit=abc'),
    code: 'invalid_value',
    param: 'limit',
    says: /limit must be an integer/,
  },
  {
    what: 'limit given twice',
    send: (c) => list(c, 'limit=1&limit=2'),
    code: 'invalid_value',
    param: 'limit',
    says: /limit must be a single integer/,
  },
  {
    what: 'after given twice',
    send: (c) => list(c, 'after=a&after=b'),
    code: 'invalid_value',
    param: 'after',
    says: /after must be a single string/,
  },
  {
    what: 'webhook events as a string',
    send: (c) => json(c, 'post', '/v1/user/webhooks', { url: 'https://example.com/hook', events: 'failover' }),
    code: 'invalid_value',
    param: 'events',
    says: /events must be an array/,
  },
  {
    what: 'a webhook url as a number',
    send: (c) => json(c, 'post', '/v1/user/webhooks', { url: 5 }),
    code: 'invalid_value',
    param: 'url',
    says: /url must be a string/,
  },
  {
    what: 'a key chain as a string',
    send: (c) => json(c, 'post', '/v1/admin/keys', { name: 'k', chain: 'echo' }, ADMIN),
    code: 'invalid_value',
    param: 'chain',
    says: /chain must be an array/,
  },
  {
    what: 'a chain step as a number',
    send: (c) => json(c, 'post', '/v1/admin/keys', { name: 'k', chain: [5] }, ADMIN),
    code: 'invalid_value',
    param: 'chain[0]',
    says: /must be an object/,
  },
  {
    what: 'a usage cap as a number',
    send: (c) =>
      json(c, 'post', '/v1/admin/keys', { name: 'k', chain: [{ provider: 'echo', model: 'm', usage_cap: 5 }] }, ADMIN),
    code: 'invalid_value',
    param: 'chain[0].usage_cap',
    says: /usage_cap must be an object/,
  },
  {
    what: 'a key name as a boolean',
    send: (c) => json(c, 'patch', '/v1/admin/keys/pk_whatever', { name: true }, ADMIN),
    code: 'invalid_value',
    param: 'name',
    says: /name must be a string/,
  },
  // with the type right, the other rules still speak
  {
    what: 'an empty speech text',
    send: (c) => json(c, 'post', '/v1/audio/speech', { ...SPEECH, text: '' }),
    code: 'invalid_value',
    param: 'text',
    says: /longer than or equal to 1/,
  },
  {
    what: 'a speed of 3',
    send: (c) => json(c, 'post', '/v1/audio/speech', { ...SPEECH, voice_setting: { ...VOICE, speed: 3 } }),
    code: 'invalid_value',
    param: 'voice_setting.speed',
    says: /not be greater than 2/,
  },
  {
    what: 'an event listed twice',
    send: (c) =>
      json(c, 'post', '/v1/user/webhooks', { url: 'https://example.com/hook', events: ['failover', 'failover'] }),
    code: 'invalid_value',
    param: 'events',
    says: /unique/,
  },
  {
    what: 'an unknown event',
    send: (c) => json(c, 'post', '/v1/user/webhooks', { url: 'https://example.com/hook', events: ['nope', 'nope'] }),
    code: 'invalid_value',
    param: 'events',
    says: /must be one of the following values/,
  },
  // bodies that are JSON but no object; invalid JSON is still called that
  {
    what: 'a rename body that is an array',
    send: (c) => rename(c, '[1]'),
    code: 'invalid_value',
    param: null,
    says: NOT_OBJECT,
  },
  {
    what: 'a rename body that is an array of objects',
    send: (c) => rename(c, '[{"name":"x"}]'),
    code: 'invalid_value',
    param: null,
    says: NOT_OBJECT,
  },
  {
    what: 'a speech body that is an array',
    send: (c) => json(c, 'post', '/v1/audio/speech', '[1]'),
    code: 'invalid_value',
    param: null,
    says: NOT_OBJECT,
  },
  {
    what: 'a webhook body that is an empty array',
    send: (c) => json(c, 'post', '/v1/user/webhooks', '[]'),
    code: 'invalid_value',
    param: null,
    says: NOT_OBJECT,
  },
  {
    what: 'an admin body that is an array',
    send: (c) => json(c, 'post', '/v1/admin/keys', '[{"name":"k"}]', ADMIN),
    code: 'invalid_value',
    param: null,
    says: NOT_OBJECT,
  },
  {
    what: 'a chat body that is an array',
    send: (c) => json(c, 'post', '/v1/chat/completions', '[1]'),
    code: 'invalid_value',
    param: null,
    says: NOT_OBJECT,
  },
  {
    what: 'a rename body of null',
    send: (c) => rename(c, 'null'),
    code: 'invalid_json',
    param: null,
    says: NOT_OBJECT,
  },
  {
    what: 'a rename body of a number',
    send: (c) => rename(c, ' 42'),
    code: 'invalid_json',
    param: null,
    says: NOT_OBJECT,
  },
  {
    what: 'a webhook body of a string',
    send: (c) => json(c, 'post', '/v1/user/webhooks', '"https://example.com/hook"'),
    code: 'invalid_json',
    param: null,
    says: NOT_OBJECT,
  },
  {
    what: 'a chat body of null (the fast path)',
    send: (c) => json(c, 'post', '/v1/chat/completions', 'null'),
    code: 'invalid_json',
    param: null,
    says: NOT_OBJECT,
  },
  {
    what: 'a rename body of a bare word',
    send: (c) => rename(c, 'nul'),
    code: 'invalid_json',
    param: null,
    says: /not valid JSON/,
  },
  {
    what: 'a chat body of a bare word (the fast path)',
    send: (c) => json(c, 'post', '/v1/chat/completions', 'truth'),
    code: 'invalid_json',
    param: null,
    says: /not valid JSON/,
  },
];

describe('bad input', () => {
  let t: TestApp;
  let c: Context;

  beforeAll(async () => {
    t = await startApp();
    const owner = await t.createKey('bad input owner');
    const other = await t.createKey('bad input other');
    const created = async (secret: string): Promise<string> => {
      const res = await t.http
        .post(BASE)
        .set('Authorization', `Bearer ${secret}`)
        .field('language', 'en')
        .field('name', 'n')
        .attach('recording', tinyWav(), 'a.wav');
      if (res.status !== 200) throw new Error(`consent creation failed: ${res.status}`);
      return (res.body as { id: string }).id;
    };
    c = {
      http: t.http,
      auth: `Bearer ${owner.secret}`,
      otherAuth: `Bearer ${other.secret}`,
      consentId: await created(owner.secret),
      otherConsentId: await created(other.secret),
    };
  });
  afterAll(() => t.close());

  it.each(CASES)('answers $what with $status $code', async ({ send, status, type, code, param }) => {
    const res = await send(c);
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['x-svc-request-id']).toMatch(/^req_[0-9A-Za-z]+$/);
    expect(res.body).toEqual({ error: { message: expect.any(String), type, param, code } });
    expect((res.body as { error: { message: string } }).error.message.length).toBeGreaterThan(0);
  });

  it.each(MESSAGE_CASES)('answers $what with 400 $code, saying what is wrong', async ({ send, code, param, says }) => {
    const res = await send(c);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: { message: expect.stringMatching(says), type: 'invalid_request_error', param, code },
    });
  });

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

  it('keeps the consent unchanged after a refused rename', async () => {
    expect((await rename(c, { name: 'renamed', language: 'de' })).status).toBe(400);
    const res = await c.http.get(`${BASE}/${c.consentId}`).set('Authorization', c.auth);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'n', language: 'en' });
  });

  it('serves the next request normally after an oversize upload', async () => {
    const res = await upload(c, { recording: oversizeWav() });
    expect(res.status).toBe(413);
    const next = await upload(c, { name: 'after oversize' });
    expect(next.status).toBe(200);
  });

  it('tells a caller with a wrong admin token that the admin token is wrong', async () => {
    const ok = await c.http.get('/v1/admin/keys').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(ok.status).toBe(200);
    const wrong = await c.http.get('/v1/admin/keys').set('Authorization', c.otherAuth.replace(/.$/, '_'));
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.message).toMatch(/admin token/i);
  });
});
