import type { Test } from 'supertest';
import { tinyWav } from './audio';
import { startApp, TestApp } from './app';

/** Shared by the bad-input specs: a context of two keys with a consent each, and helpers that send bad requests. */

export const BASE = '/v1/audio/voice_consents';
export const MiB = 1024 * 1024;

export interface Context {
  http: TestApp['http'];
  /** `Authorization` value of the key that owns `consentId`. */
  auth: string;
  /** `Authorization` value of another key. */
  otherAuth: string;
  consentId: string;
  otherConsentId: string;
}

export interface Case {
  what: string;
  send: (c: Context) => Test;
  status: number;
  type: string;
  code: string;
  param: string | null;
}

/** A multipart upload with every part valid unless the case overrides or leaves one out. */
export function upload(
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

export const rename = (c: Context, body: string | object, id = c.consentId): Test =>
  c.http.post(`${BASE}/${id}`).set('Authorization', c.auth).set('Content-Type', 'application/json').send(body);

export const list = (c: Context, query: string): Test => c.http.get(`${BASE}?${query}`).set('Authorization', c.auth);

export const oversizeWav = (): Buffer => Buffer.concat([tinyWav(), Buffer.alloc(10 * MiB)]);

/**
 * Starts the app around the calling describe (beforeAll, afterAll) and returns its context, filled in beforeAll: an
 * owner key and another key, each with one consent.
 */
export function useBadInputApp(): Context {
  const c = {} as Context;
  let t: TestApp | undefined;
  beforeAll(async () => {
    const app = await startApp();
    t = app;
    const owner = await app.createKey('bad input owner');
    const other = await app.createKey('bad input other');
    const created = async (secret: string): Promise<string> => {
      const res = await app.http
        .post(BASE)
        .set('Authorization', `Bearer ${secret}`)
        .field('language', 'en')
        .field('name', 'n')
        .attach('recording', tinyWav(), 'a.wav');
      if (res.status !== 200) throw new Error(`consent creation failed: ${res.status}`);
      return (res.body as { id: string }).id;
    };
    Object.assign(c, {
      http: app.http,
      auth: `Bearer ${owner.secret}`,
      otherAuth: `Bearer ${other.secret}`,
      consentId: await created(owner.secret),
      otherConsentId: await created(other.secret),
    });
  });
  afterAll(() => t?.close());
  return c;
}

/** The assertions of a `Case`: its status, and an error body of its type, code and param with some message. */
export async function expectCaseAnswer(c: Context, { send, status, type, code, param }: Case): Promise<void> {
  const res = await send(c);
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers['x-svc-request-id']).toMatch(/^req_[0-9A-Za-z]+$/);
  expect(res.body).toEqual({ error: { message: expect.any(String), type, param, code } });
  expect((res.body as { error: { message: string } }).error.message.length).toBeGreaterThan(0);
}
