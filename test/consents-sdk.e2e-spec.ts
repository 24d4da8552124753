import OpenAI, { NotFoundError, toFile } from 'openai';
import type { VoiceConsent } from 'openai/resources/audio/voice-consents';
import { tinyWav } from './support/audio';
import { startApp, TestApp } from './support/app';

/** The official `openai` SDK, unchanged, against the service's voice consent endpoints. */
describe('voice consents through the openai SDK', () => {
  let t: TestApp;
  let client: OpenAI;

  beforeAll(async () => {
    t = await startApp();
    const { secret } = await t.createKey('sdk user');
    client = new OpenAI({ apiKey: secret, baseURL: `${t.url}/v1`, maxRetries: 0 });
  });
  afterAll(() => t.close());

  const create = async (name: string): Promise<VoiceConsent> =>
    client.audio.voiceConsents.create({
      name,
      language: 'en-us',
      recording: await toFile(tinyWav(), 'consent.wav', { type: 'audio/wav' }),
    });

  it('creates a consent from a toFile upload', async () => {
    const consent = await create('sdk consent');
    expect(consent).toEqual({
      id: expect.stringMatching(/^vc_/),
      created_at: expect.any(Number),
      language: 'en-US',
      name: 'sdk consent',
      object: 'audio.voice_consent',
    });
  });

  it('creates a consent from a File without a content type', async () => {
    const consent = await client.audio.voiceConsents.create({
      name: 'from a File',
      language: 'fr-FR',
      recording: new File([tinyWav(800)], 'recording.bin'),
    });
    expect(consent).toMatchObject({ name: 'from a File', language: 'fr-FR', object: 'audio.voice_consent' });
  });

  it('retrieves a consent', async () => {
    const created = await create('to retrieve');
    expect(await client.audio.voiceConsents.retrieve(created.id)).toEqual(created);
  });

  it('renames a consent with update', async () => {
    const created = await create('before');
    const updated = await client.audio.voiceConsents.update(created.id, { name: 'after' });
    expect(updated).toEqual({ ...created, name: 'after' });
    expect(await client.audio.voiceConsents.retrieve(created.id)).toEqual(updated);
  });

  it('deletes a consent, after which retrieve raises NotFoundError', async () => {
    const created = await create('to delete');
    expect(await client.audio.voiceConsents.delete(created.id)).toEqual({
      id: created.id,
      deleted: true,
      object: 'audio.voice_consent',
    });
    await expect(client.audio.voiceConsents.retrieve(created.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('auto-paginates 25 consents, each exactly once, newest first', async () => {
    const { secret } = await t.createKey('sdk pager');
    const pager = new OpenAI({ apiKey: secret, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const created: string[] = [];
    for (let i = 0; i < 25; i++) {
      const consent = await pager.audio.voiceConsents.create({
        name: `page ${i}`,
        language: 'de-DE',
        recording: await toFile(tinyWav(400 + i), `c${i}.wav`),
      });
      created.push(consent.id);
    }

    const seen: string[] = [];
    for await (const consent of pager.audio.voiceConsents.list()) seen.push(consent.id);
    expect(seen).toEqual([...created].reverse());

    const small: string[] = [];
    for await (const consent of pager.audio.voiceConsents.list({ limit: 4 })) small.push(consent.id);
    expect(small).toEqual([...created].reverse());

    const first = await pager.audio.voiceConsents.list({ limit: 10 });
    expect(first.data).toHaveLength(10);
    expect(first.has_more).toBe(true);
    expect(first.hasNextPage()).toBe(true);
  });
});
