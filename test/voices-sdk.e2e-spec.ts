import OpenAI, { BadRequestError, NotFoundError, toFile } from 'openai';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { parseWavHeader } from '../src/audio/parse';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { startApp, TestApp } from './support/app';
import { tinyWav } from './support/audio';

jest.setTimeout(120000);

const MODEL = 'speech-02-hd';
const MINIMAX = 'sdk-minimax';

/** Reads a fetch body chunk by chunk, as a client streaming the audio would. */
async function readChunks(body: ReadableStream<Uint8Array> | null): Promise<Buffer[]> {
  if (!body) throw new Error('no body');
  const chunks: Buffer[] = [];
  const reader = body.getReader();
  for (let next = await reader.read(); !next.done; next = await reader.read()) chunks.push(Buffer.from(next.value));
  return chunks;
}

/** The official `openai` SDK, unchanged, against the service's custom voice and speech endpoints. */
describe('custom voices and speech through the openai SDK', () => {
  let t: TestApp;
  let minimax: FakeMiniMax;
  let client: OpenAI;

  beforeAll(async () => {
    minimax = await startFakeMiniMax({ name: MINIMAX });
    const gateway = parseGatewayConfig(
      `providers:\n  - { name: ${MINIMAX}, kind: minimax, base_url: "${minimax.url}", api_key: k }\n  - { name: espeak, kind: espeak }\n`,
      'voices sdk test',
    );
    t = await startApp({ gateway });
    const { secret } = await t.createKey('sdk voices', [
      { provider: 'espeak', model: MODEL },
      { provider: MINIMAX, model: MODEL },
    ]);
    client = new OpenAI({ apiKey: secret, baseURL: `${t.url}/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await t.close();
    await minimax.close();
  });

  const consent = async (): Promise<string> =>
    (
      await client.audio.voiceConsents.create({
        name: 'Consent of Ada',
        language: 'en-US',
        recording: await toFile(tinyWav(), 'consent.wav'),
      })
    ).id;

  it('clones with audio.voices.create, speaks with audio.speech.create (streamed body), deletes with audio.voices.delete', async () => {
    const voice = await client.audio.voices.create({
      name: 'Ada',
      consent: await consent(),
      audio_sample: await toFile(tinyWav(16000 * 12), 'sample.wav', { type: 'audio/wav' }),
    });
    expect(voice).toMatchObject({
      id: expect.stringMatching(/^voice_/),
      object: 'audio.voice',
      name: 'Ada',
      type: 'audio_sample',
      provider: MINIMAX,
    });
    expect(typeof voice.created_at).toBe('number');

    const { data, response } = await client.audio.speech
      .create({ model: MODEL, input: 'Hello in my own voice.', voice: voice.id, response_format: 'wav' })
      .withResponse();
    expect(response.headers.get('x-svc-provider-used')).toBe(MINIMAX);
    expect(response.headers.get('content-type')).toBe('audio/wav');
    const wav = Buffer.concat(await readChunks(data.body));
    const header = parseWavHeader(wav);
    expect({ rate: header.sampleRate, channels: header.channels }).toEqual({ rate: 24000, channels: 1 });

    // OpenAI's object form of a custom voice works too
    const again = await client.audio.speech
      .create({ model: MODEL, input: 'Again.', voice: { id: voice.id }, response_format: 'mp3' })
      .withResponse();
    expect(again.response.headers.get('x-svc-provider-used')).toBe(MINIMAX);
    expect((await again.data.arrayBuffer()).byteLength).toBeGreaterThan(0);

    expect(await client.audio.voices.delete(voice.id)).toEqual({
      id: voice.id,
      deleted: true,
      object: 'audio.voice.deleted',
    });
    await expect(client.audio.voices.delete(voice.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it("refuses audio.voices.create with a consent id that is not the key's: NotFoundError, nothing uploaded", async () => {
    minimax.reset();
    await expect(
      client.audio.voices.create({
        name: 'nobody',
        consent: 'vc_notmine',
        audio_sample: await toFile(tinyWav(16000 * 12), 'sample.wav'),
      }),
    ).rejects.toBeInstanceOf(NotFoundError);
    expect(minimax.count('/v1/files/upload')).toBe(0);
  });

  it('designs a voice with audio.voices.create type "prompt"', async () => {
    const voice = await client.audio.voices.create({
      type: 'prompt',
      name: 'Narrator',
      prompt: 'A warm storyteller.',
      script_hint: 'Once upon a time.',
    });
    expect(voice).toMatchObject({
      object: 'audio.voice',
      name: 'Narrator',
      type: 'prompt',
      prompt: 'A warm storyteller.',
    });
    expect(minimax.requests.filter((r) => r.path === '/v1/voice_design').pop()?.body).toMatchObject({
      prompt: 'A warm storyteller.',
      preview_text: 'Once upon a time.',
    });
  });

  it("speaks a built-in voice with OpenAI's shape: pcm is 16-bit, 24 kHz mono, streamed", async () => {
    const { data, response } = await client.audio.speech
      .create({
        model: MODEL,
        input: 'First sentence. Second sentence.',
        voice: 'en-us',
        response_format: 'pcm',
        speed: 1.2,
      })
      .withResponse();
    expect(response.headers.get('x-svc-provider-used')).toBe('espeak');
    expect(response.headers.get('content-type')).toBe('audio/L16;rate=24000;channels=1');
    const pcm = Buffer.concat(await readChunks(data.body));
    expect(pcm.length % 2).toBe(0);
    expect(pcm.length / 2 / 24000).toBeGreaterThan(0.5);
  });

  it('refuses what the gateway cannot honour with the field named: speed outside 0.25..4, aac from espeak, an unknown voice', async () => {
    const refusal = async (body: Parameters<typeof client.audio.speech.create>[0]): Promise<BadRequestError> => {
      const err: unknown = await client.audio.speech.create(body).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(BadRequestError);
      return err as BadRequestError;
    };
    expect((await refusal({ model: MODEL, input: 'x', voice: 'en-us', speed: 4.5 })).param).toBe('speed');
    expect(await refusal({ model: MODEL, input: 'x', voice: 'en-us', response_format: 'aac' })).toMatchObject({
      code: 'format_not_supported',
      param: 'response_format',
    });
    expect(await refusal({ model: MODEL, input: 'x', voice: 'voice_000000000000000000000000' })).toMatchObject({
      code: 'voice_not_found',
      param: 'voice',
    });
  });
});
