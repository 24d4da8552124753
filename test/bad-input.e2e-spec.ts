import { notAudio, tinyWav } from './support/audio';
import { BASE, Case, expectCaseAnswer, MiB, oversizeWav, rename, useBadInputApp, upload } from './support/bad-input';

// The consent's own bodies: the create form and the rename body. Lists, ids and credentials: bad-input-access.e2e-spec.ts;
// what the messages say: bad-input-messages.e2e-spec.ts.

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
  ...['english', 'xx-YY', 'en-UK'].map(
    (language): Case => ({
      what: `an upload with the well-formed but unregistered tag '${language}'`,
      send: (c) => upload(c, { language }),
      status: 400,
      type: 'invalid_request_error',
      code: 'invalid_value',
      param: 'language',
    }),
  ),
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
];

describe('bad input', () => {
  const c = useBadInputApp();

  it.each(CASES)('answers $what with $status $code', (k) => expectCaseAnswer(c, k));

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
});
