import { parseMultipart } from '../../test/fakes/fake-upstream';
import type { ResolvedProvider } from '../config/gateway-config';
import { AudioUpload, VoiceCloneCall } from './provider-adapter';
import { CUSTOM_VOICE_ID, MiniMaxAdapter } from './minimax.adapter';
import { OpenAiAdapter } from './openai.adapter';
import { outcomeOf } from '../../test/support/upstream-outcome';
import { type RecordedCall, refusal, ScriptedExecutor } from '../../test/support/scripted-executor';

const provider = (kind: 'minimax' | 'openai', groupId: string | null = null): ResolvedProvider => ({
  name: kind,
  kind,
  baseUrl: 'http://upstream.test/v1',
  apiKey: 'up-key',
  groupId,
  timeoutMs: null,
  capabilities: ['speech'],
});
const audio = (filename: string, fill: number): AudioUpload => ({
  data: Buffer.alloc(2048, fill),
  contentType: 'audio/wav',
  filename,
});
const cloneCall = (voiceId = 'svcTestVoice0001'): VoiceCloneCall => ({
  voiceId,
  name: 'Ada',
  sample: audio('sample.wav', 1),
  consent: { recording: audio('consent.wav', 2), language: 'en-US', name: 'Consent of Ada' },
});
const signal = (): AbortSignal => AbortSignal.timeout(10000);

describe("MiniMax's voice rule", () => {
  it.each(['svcAbcdefgh', 'MyVoice001', 'a-b_c-d-e1'])('accepts %s', (id) =>
    expect(CUSTOM_VOICE_ID.test(id)).toBe(true),
  );
  it.each(['short1', '1startsWithDigit', 'endsWithDash-', 'ends_with_', 'has space1', `a${'b'.repeat(256)}`])(
    'refuses %s',
    (id) => expect(CUSTOM_VOICE_ID.test(id)).toBe(false),
  );
});

/** A multipart body's parts, as the upstream reads them. */
const partsOf = (record: RecordedCall) => parseMultipart(record.raw as Buffer, record.headers['content-type']);
const ok = { status_code: 0, status_msg: 'success' };

describe('MiniMaxAdapter voice creation (a scripted upstream)', () => {
  let upstream: ScriptedExecutor;
  let adapter: MiniMaxAdapter;

  beforeEach(() => {
    upstream = new ScriptedExecutor();
    adapter = new MiniMaxAdapter(provider('minimax', 'grp-1'), {}, upstream);
  });

  it('uploads the sample with purpose voice_clone (GroupId on the query), then clones it under the chosen id', async () => {
    upstream.answer({ json: { file: { file_id: 42 }, base_resp: ok } }, { json: { base_resp: ok } });
    expect(await adapter.cloneVoice(cloneCall(), signal())).toEqual({ voiceId: 'svcTestVoice0001', method: 'clone' });
    const [upload, clone] = upstream.calls;
    expect(upload).toMatchObject({ op: 'json', method: 'POST', path: '/files/upload?GroupId=grp-1' });
    expect(upload.headers.authorization).toBe('Bearer up-key');
    expect(upload.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    const parts = partsOf(upload);
    expect(parts.get('purpose')?.value.toString()).toBe('voice_clone');
    expect(parts.get('file')).toMatchObject({ filename: 'sample.wav', contentType: 'audio/wav' });
    expect(parts.get('file')?.value.equals(Buffer.alloc(2048, 1))).toBe(true);
    expect(clone).toMatchObject({ op: 'json', path: '/voice_clone?GroupId=grp-1' });
    expect(clone.headers).toEqual({ authorization: 'Bearer up-key', 'content-type': 'application/json' });
    expect(clone.body).toEqual({ file_id: 42, voice_id: 'svcTestVoice0001' });
  });

  it('refuses an upload reply without a file_id as invalid_response, before cloning', async () => {
    upstream.answer({ json: { file: {}, base_resp: ok } });
    expect(await outcomeOf(() => adapter.cloneVoice(cloneCall(), signal()))).toMatchObject({
      kind: 'provider_error',
      code: 'invalid_response',
    });
    expect(upstream.calls).toHaveLength(1);
  });

  it('refuses an id that breaks the rule before any call', async () => {
    await expect(adapter.cloneVoice(cloneCall('bad id'), signal())).rejects.toThrow(/voice id rule/);
    expect(upstream.calls).toHaveLength(0);
  });

  it('designs with prompt, preview_text and the chosen id; deletes by voice type', async () => {
    upstream.answer({ json: { voice_id: 'svcDesigned0001', base_resp: ok } }, { json: { base_resp: ok } });
    expect(
      await adapter.designVoice({ voiceId: 'svcDesigned0001', prompt: 'calm', previewText: 'Hi.' }, signal()),
    ).toEqual({ voiceId: 'svcDesigned0001', method: 'design' });
    expect(upstream.calls[0]).toMatchObject({ op: 'json', path: '/voice_design?GroupId=grp-1' });
    expect(upstream.calls[0].body).toEqual({ prompt: 'calm', preview_text: 'Hi.', voice_id: 'svcDesigned0001' });
    await adapter.deleteVoice({ voiceId: 'svcDesigned0001', method: 'design' }, signal());
    expect(upstream.calls[1]).toMatchObject({
      path: '/delete_voice?GroupId=grp-1',
      body: { voice_type: 'voice_generation', voice_id: 'svcDesigned0001' },
    });
  });

  it("reports MiniMax's invalid-parameter reply (2013) as the request's fault, an auth failure (1004) as the provider's", async () => {
    upstream.answer(
      { json: { base_resp: { status_code: 2013, status_msg: 'invalid params' } } },
      { json: { base_resp: { status_code: 1004, status_msg: 'login fail' } } },
    );
    expect(await outcomeOf(() => adapter.cloneVoice(cloneCall(), signal()))).toEqual({
      kind: 'http',
      status: 400,
      message: 'invalid params (MiniMax 2013)',
    });
    expect(
      await outcomeOf(() =>
        adapter.designVoice({ voiceId: 'svcDesigned0002', prompt: 'p', previewText: 't' }, signal()),
      ),
    ).toMatchObject({ kind: 'provider_error', code: 1004 });
  });
});

describe('OpenAiAdapter custom voices (a scripted upstream)', () => {
  let upstream: ScriptedExecutor;
  let adapter: OpenAiAdapter;

  beforeEach(() => {
    upstream = new ScriptedExecutor();
    adapter = new OpenAiAdapter(provider('openai'), {}, upstream);
  });

  it('uploads the consent recording first, then the sample naming it; delete removes both', async () => {
    upstream.answer({ json: { id: 'cons_1' } }, { json: { id: 'voice_1' } }, { json: {} }, { json: {} });
    const made = await adapter.cloneVoice(cloneCall(), signal());
    expect(made).toEqual({ voiceId: 'voice_1', consentId: 'cons_1', method: 'clone' });
    const [consent, voice] = upstream.calls;
    expect(consent).toMatchObject({ op: 'json', method: 'POST', path: '/audio/voice_consents' });
    expect(consent.headers.authorization).toBe('Bearer up-key');
    const consentParts = partsOf(consent);
    expect(consentParts.get('name')?.value.toString()).toBe('Consent of Ada');
    expect(consentParts.get('language')?.value.toString()).toBe('en-US');
    expect(consentParts.get('recording')?.value.equals(Buffer.alloc(2048, 2))).toBe(true);
    expect(voice).toMatchObject({ op: 'json', method: 'POST', path: '/audio/voices' });
    const voiceParts = partsOf(voice);
    expect(voiceParts.get('name')?.value.toString()).toBe('Ada');
    expect(voiceParts.get('consent')?.value.toString()).toBe('cons_1');
    expect(voiceParts.get('audio_sample')?.value.equals(Buffer.alloc(2048, 1))).toBe(true);
    await adapter.deleteVoice(made, signal());
    expect(upstream.calls.slice(2).map((c) => [c.op, c.method, c.path])).toEqual([
      ['check', 'DELETE', '/audio/voices/voice_1'],
      ['check', 'DELETE', '/audio/voice_consents/cons_1'],
    ]);
  });

  it('deletes the consent again when the voice is refused, and reports the refusal', async () => {
    upstream.answer(
      { json: { id: 'cons_2' } },
      refusal(400, { error: { message: 'sample too short', type: 'invalid_request_error' } }),
      { json: {} },
    );
    expect(await outcomeOf(() => adapter.cloneVoice(cloneCall(), signal()))).toMatchObject({
      kind: 'http',
      status: 400,
      message: 'sample too short',
    });
    expect(upstream.calls[2]).toMatchObject({ op: 'check', method: 'DELETE', path: '/audio/voice_consents/cons_2' });
  });

  it('refuses a reply without the id as invalid_response', async () => {
    upstream.answer({ json: {} });
    expect(await outcomeOf(() => adapter.cloneVoice(cloneCall(), signal()))).toMatchObject({
      kind: 'provider_error',
      code: 'invalid_response',
    });
  });

  it('speaks a custom voice as {"id": …} and passes instructions', async () => {
    upstream.answer({ chunks: [Buffer.alloc(4800)] });
    const output = { format: 'pcm' as const, sampleRate: 24000, bitrate: 128000, channels: 1 };
    const audioStream = await adapter.speech(
      {
        text: 'Hi.',
        voiceId: 'voice_123',
        speed: 1,
        vol: 1,
        pitch: 0,
        output,
        customVoice: true,
        instructions: 'Whisper.',
      },
      { model: 'gpt-4o-mini-tts', signal: signal(), requestId: 'req_test' },
    );
    const chunks: Buffer[] = [];
    for await (const chunk of audioStream.chunks) chunks.push(chunk);
    expect(Buffer.concat(chunks).length).toBeGreaterThan(0);
    expect(upstream.only().body).toMatchObject({ voice: { id: 'voice_123' }, instructions: 'Whisper.' });
  });
});
