import { parseWavHeader } from '../src/audio/parse';
import { notAudio, tinyWav } from './support/audio';
import { eventually } from './support/failover';
import { MODEL, SAMPLE, VoiceRecord, VoicesHarness } from './support/voices';
import { StreamClient } from './support/ws-client';

// speech through the offline engine and async tasks take a while on a busy machine
jest.setTimeout(120000);

const MINIMAX = 'vc-minimax';
/** The holder comes second in the chain on purpose: a custom voice must still be served by it first. */
const CHAIN = [
  { provider: 'espeak', model: MODEL },
  { provider: MINIMAX, model: MODEL, voice_map: { '*': 'male-qn-qingse' } },
];

describe('custom voices', () => {
  let h: VoicesHarness;
  let secret: string;

  beforeAll(async () => {
    h = await VoicesHarness.start(MINIMAX);
    secret = await h.key('voices', CHAIN);
  });
  afterAll(() => h.close());
  beforeEach(() => {
    h.minimax.setMode('ok');
    h.minimax.reset();
  });

  describe('the consent gate (no upstream call on refusal)', () => {
    it('refuses a clone without a consent: 400 missing_field', async () => {
      const res = await h.clone(secret, { name: 'no consent' });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'missing_field', param: 'consent' });
      expect(h.upstreamCalls()).toBe(0);
    });

    it("refuses another key's consent exactly like an unknown one: 404", async () => {
      const theirs = await h.createConsent(await h.key('other', CHAIN));
      const res = await h.clone(secret, { name: 'borrowed', consent: theirs });
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'resource_not_found', param: 'consent' });
      expect((await h.clone(secret, { name: 'made up', consent: 'vc_doesnotexist' })).status).toBe(404);
      expect(h.upstreamCalls()).toBe(0);
    });

    it('refuses a deleted consent: 404', async () => {
      const consent = await h.createConsent(secret);
      expect((await h.deleteConsent(secret, consent)).status).toBe(200);
      const res = await h.clone(secret, { name: 'too late', consent });
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'resource_not_found', param: 'consent' });
      expect(h.upstreamCalls()).toBe(0);
    });

    it("applies MiniMax's sample rules before uploading: length (10 s to 5 min) and type", async () => {
      const consent = await h.createConsent(secret);
      const short = await h.clone(secret, { name: 'short', consent }, tinyWav(16000 * 3));
      expect(short.status).toBe(400);
      expect(short.body.error).toMatchObject({ code: 'invalid_value', param: 'audio_sample' });
      expect(short.body.error.message).toMatch(/at least 10 s/);
      const png = await h.clone(secret, { name: 'not audio', consent }, notAudio());
      expect(png.status).toBe(415);
      expect(png.body.error).toMatchObject({ code: 'unsupported_media_type', param: 'audio_sample' });
      const missing = await h.clone(secret, { name: 'no sample', consent }, null);
      expect(missing.status).toBe(400);
      expect(missing.body.error).toMatchObject({ code: 'missing_field', param: 'audio_sample' });
      expect(h.upstreamCalls()).toBe(0);
    });
  });

  describe('clone, speak, delete', () => {
    it('clones on MiniMax: the sample is uploaded for voice_clone, then cloned under a well-formed id of its own', async () => {
      const consent = await h.createConsent(secret);
      const voice = await h.cloneVoice(secret, consent);
      expect(voice).toEqual({
        id: expect.stringMatching(/^voice_[0-9A-Za-z]{24}$/),
        object: 'audio.voice',
        name: 'Ada clone',
        type: 'audio_sample',
        consent_id: consent,
        provider: MINIMAX,
        created_at: expect.any(Number),
      });
      const [file] = [...h.minimax.files.values()];
      expect(file).toMatchObject({ purpose: 'voice_clone', filename: 'sample.wav' });
      expect(file.bytes.equals(SAMPLE)).toBe(true);
      const upstreamId = await h.upstreamIdOf(voice.id);
      expect(upstreamId).toMatch(/^[A-Za-z][A-Za-z0-9_-]{6,254}[A-Za-z0-9]$/);
      expect(upstreamId).not.toBe(voice.id);
      expect(h.minimax.voices.get(upstreamId)).toBe('voice_cloning');

      expect((await h.t.http.get(`/v1/audio/voices/${voice.id}`).set(...h.auth(secret))).body).toEqual(voice);
      const listed = (await h.t.http.get('/v1/audio/voices').set(...h.auth(secret))).body.data as Array<{
        type: string;
      }>;
      expect(listed[0]).toMatchObject({ ...voice, languages: [] });
      expect(listed.some((v) => v.type === 'builtin')).toBe(true);
      const stranger = await h.key('stranger', CHAIN);
      expect((await h.t.http.get(`/v1/audio/voices/${voice.id}`).set(...h.auth(stranger))).status).toBe(404);
    });

    it('speaks with the new voice on every path, at the provider that holds it, then deletes it there too', async () => {
      const consent = await h.createConsent(secret);
      const voice = await h.cloneVoice(secret, consent);
      const upstreamId = await h.upstreamIdOf(voice.id);

      // sync: the holder is served first although espeak is the chain's first step
      const sync = await h.speak(secret, voice.id);
      expect(sync.status).toBe(200);
      expect(sync.headers).toMatchObject({
        'x-svc-provider-used': MINIMAX,
        'x-svc-fallback-level': '0',
        'x-svc-is-fallback': 'false',
      });
      expect(parseWavHeader(sync.body as Buffer).sampleRate).toBe(16000);
      expect(h.lastT2aVoice()).toBe(upstreamId);

      // async
      const submitted = await h.t.http
        .post('/v1/audio/speech/async')
        .set(...h.auth(secret))
        .send({
          model: MODEL,
          text: 'A longer text. It has two sentences.',
          voice_setting: { voice_id: voice.id },
          audio_setting: { format: 'mp3' },
        });
      expect(submitted.status).toBe(202);
      const task = await eventually(
        async () =>
          (await h.t.http.get(`/v1/audio/speech/async/${submitted.body.id as string}`).set(...h.auth(secret))).body as {
            status: string;
            provider: string | null;
          },
        (body) => body.status === 'completed' || body.status === 'failed',
        60000,
        'task done',
      );
      expect(task).toMatchObject({ status: 'completed', provider: MINIMAX });
      expect(h.lastT2aVoice()).toBe(upstreamId);

      // stream
      const client = await StreamClient.connect(`${h.t.url.replace('http', 'ws')}/v1/audio/speech/stream`, {
        Authorization: `Bearer ${secret}`,
      });
      client.send({
        event: 'task_start',
        model: MODEL,
        voice_setting: { voice_id: voice.id },
        audio_setting: { format: 'pcm' },
      });
      expect(await client.waitFor((m) => m.event === 'task_started')).toMatchObject({
        provider: MINIMAX,
        fallback_level: 0,
      });
      client.send({ event: 'task_continue', text: 'Streaming in my own voice.' });
      client.send({ event: 'task_finish' });
      await client.waitFor((m) => m.event === 'task_finished');
      expect(client.messages.filter((m) => m.event === 'task_continued').every((m) => m.provider === MINIMAX)).toBe(
        true,
      );
      expect(h.lastT2aVoice()).toBe(upstreamId);

      // delete: here and upstream; the id no longer speaks, and its consent is free
      const deleted = await h.deleteVoice(secret, voice.id);
      expect(deleted.status).toBe(200);
      expect(deleted.body).toEqual({ id: voice.id, deleted: true, object: 'audio.voice.deleted' });
      expect(h.minimax.requests.find((r) => r.path === '/v1/delete_voice')?.body).toEqual({
        voice_type: 'voice_cloning',
        voice_id: upstreamId,
      });
      expect(h.minimax.voices.has(upstreamId)).toBe(false);
      expect((await h.t.http.get(`/v1/audio/voices/${voice.id}`).set(...h.auth(secret))).status).toBe(404);
      expect((await h.deleteVoice(secret, voice.id)).status).toBe(404);
      h.minimax.reset();
      const gone = await h.speak(secret, voice.id);
      expect(gone.status).toBe(400);
      expect(gone.body.error).toMatchObject({ code: 'voice_not_found', param: 'voice_setting.voice_id' });
      expect(h.minimax.count('/v1/t2a_v2')).toBe(0);
      expect((await h.deleteConsent(secret, consent)).status).toBe(200);
    });

    it("never speaks another key's custom voice (and never passes its id upstream)", async () => {
      const voice = await h.cloneVoice(secret, await h.createConsent(secret));
      const neighbour = await h.key('neighbour', CHAIN);
      h.minimax.reset();
      const res = await h.speak(neighbour, voice.id);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'voice_not_found' });
      expect(h.minimax.count('/v1/t2a_v2')).toBe(0);
    });

    it('designs a voice from a description without a consent, and speaks with it', async () => {
      const res = await h.t.http
        .post('/v1/audio/voices/design')
        .set(...h.auth(secret))
        .send({ name: 'Narrator', prompt: 'A calm, low narrator.', preview_text: 'Once upon a time.' });
      expect(res.status).toBe(200);
      const voice = res.body as VoiceRecord;
      expect(voice).toEqual({
        id: expect.stringMatching(/^voice_/),
        object: 'audio.voice',
        name: 'Narrator',
        type: 'prompt',
        consent_id: null,
        provider: MINIMAX,
        created_at: expect.any(Number),
        prompt: 'A calm, low narrator.',
      });
      const upstreamId = await h.upstreamIdOf(voice.id);
      expect(h.minimax.requests.find((r) => r.path === '/v1/voice_design')?.body).toEqual({
        prompt: 'A calm, low narrator.',
        preview_text: 'Once upon a time.',
        voice_id: upstreamId,
      });
      expect((await h.speak(secret, voice.id)).headers['x-svc-provider-used']).toBe(MINIMAX);
      expect(h.lastT2aVoice()).toBe(upstreamId);
      expect((await h.deleteVoice(secret, voice.id)).status).toBe(200);
      expect(h.minimax.requests.find((r) => r.path === '/v1/delete_voice')?.body).toEqual({
        voice_type: 'voice_generation',
        voice_id: upstreamId,
      });
    });

    it("relays the provider's refusal (400 upstream_rejected) and failure (502 voice_creation_failed); nothing is stored", async () => {
      const consent = await h.createConsent(secret);
      h.minimax.setMode('baseRespError', { status: 2013, message: 'invalid params, audio quality too low' });
      const refused = await h.clone(secret, { name: 'refused', consent });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({ type: 'invalid_request_error', code: 'upstream_rejected' });
      expect(refused.body.error.message).toMatch(/audio quality too low/);
      h.minimax.setMode('baseRespError', { status: 1004 });
      const failed = await h.clone(secret, { name: 'failed', consent });
      expect(failed.status).toBe(502);
      expect(failed.body.error).toMatchObject({ type: 'upstream_error', code: 'voice_creation_failed' });
      expect(await h.db.query('SELECT id FROM custom_voices WHERE consent_id = $1', [consent])).toEqual([]);
      // nothing holds the consent
      expect((await h.deleteConsent(secret, consent)).status).toBe(200);
    });

    it('refuses to make a voice when no provider of the chain can: 400 voice_creation_not_supported', async () => {
      const offline = await h.key('offline', [{ provider: 'espeak', model: MODEL }]);
      const res = await h.clone(offline, { name: 'nowhere', consent: await h.createConsent(offline) });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('voice_creation_not_supported');
      const design = await h.t.http
        .post('/v1/audio/voices/design')
        .set(...h.auth(offline))
        .send({ name: 'n', prompt: 'p', preview_text: 'x' });
      expect(design.status).toBe(400);
      expect(h.upstreamCalls()).toBe(0);
    });
  });
});
