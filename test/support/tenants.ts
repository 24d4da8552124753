import { tinyWav } from './audio';
import type { TestApp } from './app';

/** Chat through `echo`, speech through the offline engine. */
export const TENANT_CHAIN = [
  { provider: 'echo', model: 'echo-1' },
  { provider: 'espeak', model: 'speech-02-hd' },
];

/** One key and a row of each kind it owns. */
export interface Tenant {
  id: string;
  secret: string;
  consentId: string;
  taskId: string;
  webhookId: string;
  /** `x-svc-request-id` of a chat request of this key (its usage record). */
  requestId: string;
}

function created(what: string, res: { status: number; body: unknown }, status: number): Record<string, unknown> {
  if (res.status !== status) throw new Error(`${what} failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as Record<string, unknown>;
}

/** A key with one consent, one async speech task, one webhook endpoint and one usage record. */
export async function makeTenant(
  t: TestApp,
  name: string,
  webhookUrl = `http://127.0.0.1:9/${name.replace(/\W/g, '-')}`,
): Promise<Tenant> {
  const key = await t.createKey(name, TENANT_CHAIN);
  const auth = `Bearer ${key.secret}`;
  const consent = created(
    'consent',
    await t.http
      .post('/v1/audio/voice_consents')
      .set('Authorization', auth)
      .field('language', 'en-US')
      .field('name', `${name} consent`)
      .attach('recording', tinyWav(), 'consent.wav'),
    200,
  );
  const task = created(
    'speech task',
    await t.http
      .post('/v1/audio/speech/async')
      .set('Authorization', auth)
      .send({
        model: 'speech-02-hd',
        text: 'A short task.',
        voice_setting: { voice_id: 'en-us' },
        audio_setting: { format: 'wav' },
      }),
    202,
  );
  const webhook = created(
    'webhook',
    await t.http.post('/v1/user/webhooks').set('Authorization', auth).send({ url: webhookUrl }),
    201,
  );
  const chat = await t.http
    .post('/v1/chat/completions')
    .set('Authorization', auth)
    .send({ model: 'echo-1', messages: [{ role: 'user', content: 'Hi' }] });
  created('chat request', chat, 200);
  return {
    id: key.id,
    secret: key.secret,
    consentId: consent.id as string,
    taskId: task.id as string,
    webhookId: webhook.id as string,
    requestId: chat.headers['x-svc-request-id'],
  };
}

/** Deletes a key through the admin API. */
export async function deleteKey(t: TestApp, adminToken: string, id: string): Promise<void> {
  const res = await t.http.delete(`/v1/admin/keys/${id}`).set('Authorization', `Bearer ${adminToken}`);
  if (res.status !== 200) throw new Error(`key deletion failed: ${res.status}`);
}
