import { ADMIN_TOKEN } from './support/app';
import { MODEL, VoicesHarness } from './support/voices';

jest.setTimeout(120000);

const MINIMAX = 'vcc-minimax';
const CHAIN = [
  { provider: MINIMAX, model: MODEL },
  { provider: 'espeak', model: MODEL, voice_map: { '*': 'en-us' } },
];

describe('custom voices and their consents', () => {
  let h: VoicesHarness;
  let secret: string;

  beforeAll(async () => {
    h = await VoicesHarness.start(MINIMAX);
    secret = await h.key('consents', CHAIN);
  });
  afterAll(() => h.close());
  beforeEach(() => {
    h.minimax.setMode('ok');
    h.minimax.reset();
  });

  describe('a consent behind a voice', () => {
    it('cannot be deleted while the voice exists: 409 consent_in_use, and it stays intact', async () => {
      const consent = await h.createConsent(secret);
      const voice = await h.cloneVoice(secret, consent);
      const refused = await h.deleteConsent(secret, consent);
      expect(refused.status).toBe(409);
      expect(refused.body.error).toMatchObject({
        type: 'invalid_request_error',
        code: 'consent_in_use',
        param: 'consent_id',
      });
      expect((await h.t.http.get(`/v1/audio/voice_consents/${consent}/content`).set(...h.auth(secret))).status).toBe(
        200,
      );
      expect((await h.deleteVoice(secret, voice.id)).status).toBe(200);
      expect((await h.deleteConsent(secret, consent)).status).toBe(200);
    });

    it('is protected by the database itself, not only by a check before the delete', async () => {
      const consent = await h.createConsent(secret);
      await h.cloneVoice(secret, consent);
      await expect(h.db.query('DELETE FROM voice_consents WHERE id = $1', [consent])).rejects.toThrow(
        /FK_custom_voices_consent/,
      );
    });

    it('deleted while its clone is in flight: the clone is refused and the upstream voice removed', async () => {
      const consent = await h.createConsent(secret);
      let release = (): void => undefined;
      h.minimax.cloneGate = new Promise((resolve) => (release = resolve));
      try {
        const pending = h.clone(secret, { name: 'racing', consent }).then((res) => res);
        await h.minimax.waitUntil(() => h.minimax.count('/v1/voice_clone') === 1, 20000);
        expect((await h.deleteConsent(secret, consent)).status).toBe(200);
        release();
        const res = await pending;
        expect(res.status).toBe(404);
        expect(res.body.error).toMatchObject({ code: 'resource_not_found', param: 'consent' });
      } finally {
        h.minimax.cloneGate = null;
        release();
      }
      const cloned = h.minimax.requests.find((r) => r.path === '/v1/voice_clone')?.body as { voice_id: string };
      expect(h.minimax.voices.has(cloned.voice_id)).toBe(false);
      expect(await h.db.query('SELECT id FROM custom_voices WHERE consent_id = $1', [consent])).toEqual([]);
    });

    it('goes with its key: deleting the key deletes its consents and voices together', async () => {
      const key = await h.t.createKey('leaving', CHAIN);
      await h.cloneVoice(key.secret, await h.createConsent(key.secret));
      const removed = await h.t.http.delete(`/v1/admin/keys/${key.id}`).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
      expect(removed.status).toBe(200);
      expect(await h.db.query('SELECT id FROM custom_voices WHERE key_id = $1', [key.id])).toEqual([]);
    });
  });

  describe('fallback', () => {
    it("speaks with the fallback step's voice_map default when the holder fails, and the alert says so", async () => {
      const voice = await h.cloneVoice(secret, await h.createConsent(secret));
      h.minimax.setMode('http500');
      const res = await h.speak(secret, voice.id);
      expect(res.status).toBe(200);
      expect(res.headers).toMatchObject({
        'x-svc-provider-used': 'espeak',
        'x-svc-is-fallback': 'true',
        'x-svc-fallback-level': '1',
      });
      expect(JSON.parse(res.headers['x-svc-fallback-alert'])).toEqual({
        message: `${MINIMAX} failed (HTTP 500); served by espeak at level 1; custom voice ${voice.id} is held by ${MINIMAX}; espeak spoke with its voice en-us`,
        exhausted_provider: MINIMAX,
        active_provider: 'espeak',
        fallback_level: 1,
      });
      expect(h.lastT2aVoice()).toBe(await h.upstreamIdOf(voice.id));
    });

    it('a built-in voice fails over without a voice note in the alert', async () => {
      h.minimax.setMode('http500');
      const res = await h.speak(secret, 'male-qn-qingse');
      expect(res.status).toBe(200);
      expect((JSON.parse(res.headers['x-svc-fallback-alert']) as { message: string }).message).toBe(
        `${MINIMAX} failed (HTTP 500); served by espeak at level 1`,
      );
    });
  });
});
