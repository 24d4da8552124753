import { FakeMiniMax, startFakeMiniMax } from '../../test/fakes/fake-minimax';
import { FakeOpenAi, startFakeOpenAi } from '../../test/fakes/fake-openai';
import { parseMultipart } from '../../test/fakes/fake-upstream';
import type { ResolvedProvider } from '../config/gateway-config';
import { AudioUpload, VoiceCloneCall } from './provider-adapter';
import { CUSTOM_VOICE_ID, MiniMaxAdapter } from './minimax.adapter';
import { OpenAiAdapter } from './openai.adapter';
import { outcomeOf } from '../../test/support/upstream-outcome';

const provider = (kind: 'minimax' | 'openai', baseUrl: string, groupId: string | null = null): ResolvedProvider => ({
  name: kind,
  kind,
  baseUrl,
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

describe('MiniMaxAdapter voice creation against the fake', () => {
  let fake: FakeMiniMax;
  let adapter: MiniMaxAdapter;

  beforeAll(async () => {
    fake = await startFakeMiniMax();
    adapter = new MiniMaxAdapter(provider('minimax', fake.url, 'grp-1'));
  });
  afterEach(() => {
    fake.setMode('ok');
    fake.reset();
  });
  afterAll(async () => {
    await adapter.close();
    await fake.close();
  });

  it('uploads the sample with purpose voice_clone (GroupId on the query), then clones it under the chosen id', async () => {
    expect(await adapter.cloneVoice(cloneCall(), signal())).toEqual({ voiceId: 'svcTestVoice0001', method: 'clone' });
    const [upload, clone] = fake.requests;
    expect(upload.path).toBe('/v1/files/upload');
    expect(upload.headers.authorization).toBe('Bearer up-key');
    const parts = parseMultipart(upload.raw, upload.headers['content-type']);
    expect(parts.get('purpose')?.value.toString()).toBe('voice_clone');
    expect(parts.get('file')).toMatchObject({ filename: 'sample.wav', contentType: 'audio/wav' });
    expect(parts.get('file')?.value.equals(Buffer.alloc(2048, 1))).toBe(true);
    expect(clone.path).toBe('/v1/voice_clone');
    expect(clone.body).toEqual({ file_id: [...fake.files.keys()][0], voice_id: 'svcTestVoice0001' });
    expect(fake.urls.every((url) => url.endsWith('?GroupId=grp-1'))).toBe(true);
  });

  it('refuses an id that breaks the rule before any call', async () => {
    await expect(adapter.cloneVoice(cloneCall('bad id'), signal())).rejects.toThrow(/voice id rule/);
    expect(fake.requests).toHaveLength(0);
  });

  it('designs with prompt, preview_text and the chosen id; deletes by voice type', async () => {
    expect(
      await adapter.designVoice({ voiceId: 'svcDesigned0001', prompt: 'calm', previewText: 'Hi.' }, signal()),
    ).toEqual({ voiceId: 'svcDesigned0001', method: 'design' });
    expect(fake.requests[0].body).toEqual({ prompt: 'calm', preview_text: 'Hi.', voice_id: 'svcDesigned0001' });
    await adapter.deleteVoice({ voiceId: 'svcDesigned0001', method: 'design' }, signal());
    expect(fake.requests[1]).toMatchObject({
      path: '/v1/delete_voice',
      body: { voice_type: 'voice_generation', voice_id: 'svcDesigned0001' },
    });
  });

  it("reports MiniMax's invalid-parameter reply (2013) as the request's fault, an auth failure (1004) as the provider's", async () => {
    fake.setMode('baseRespError', { status: 2013, message: 'invalid params' });
    expect(await outcomeOf(() => adapter.cloneVoice(cloneCall(), signal()))).toEqual({
      kind: 'http',
      status: 400,
      message: 'invalid params (MiniMax 2013)',
    });
    fake.setMode('baseRespError', { status: 1004 });
    expect(
      await outcomeOf(() =>
        adapter.designVoice({ voiceId: 'svcDesigned0002', prompt: 'p', previewText: 't' }, signal()),
      ),
    ).toMatchObject({ kind: 'provider_error', code: 1004 });
  });
});

describe('OpenAiAdapter custom voices against the fake', () => {
  let fake: FakeOpenAi;
  let adapter: OpenAiAdapter;

  beforeAll(async () => {
    fake = await startFakeOpenAi({ name: 'oa' });
    adapter = new OpenAiAdapter(provider('openai', fake.url));
  });
  afterEach(() => {
    fake.setMode('ok');
    fake.reset();
  });
  afterAll(async () => {
    await adapter.close();
    await fake.close();
  });

  it('uploads the consent recording first, then the sample naming it; delete removes both', async () => {
    const made = await adapter.cloneVoice(cloneCall(), signal());
    expect(made).toEqual({
      voiceId: expect.stringMatching(/^voice_/),
      consentId: expect.stringMatching(/^cons_/),
      method: 'clone',
    });
    expect(fake.voiceThings.get(made.consentId ?? '')).toMatchObject({
      kind: 'consent',
      fields: { name: 'Consent of Ada', language: 'en-US' },
    });
    expect(fake.voiceThings.get(made.voiceId)).toMatchObject({
      kind: 'voice',
      fields: { name: 'Ada', consent: made.consentId },
    });
    expect(fake.voiceThings.get(made.voiceId)?.file.equals(Buffer.alloc(2048, 1))).toBe(true);
    await adapter.deleteVoice(made, signal());
    expect(fake.voiceThings.size).toBe(0);
  });

  it('speaks a custom voice as {"id": …} and passes instructions', async () => {
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
    expect(fake.requests[0].body).toMatchObject({ voice: { id: 'voice_123' }, instructions: 'Whisper.' });
  });
});
