import type { Test } from 'supertest';
import { ADMIN_TOKEN } from './support/app';
import { Context, list, rename, useBadInputApp } from './support/bad-input';

// What a 400's message says about the value that broke a rule.

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

describe('bad input: messages', () => {
  const c = useBadInputApp();

  it.each(MESSAGE_CASES)('answers $what with 400 $code, saying what is wrong', async ({ send, code, param, says }) => {
    const res = await send(c);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: { message: expect.stringMatching(says), type: 'invalid_request_error', param, code },
    });
  });
});
