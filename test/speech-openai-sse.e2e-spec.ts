import OpenAI, { APIError, BadRequestError } from 'openai';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { parseWavHeader, pcmFrameCount } from '../src/audio/parse';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { startApp, TestApp } from './support/app';

jest.setTimeout(120000);

const MODEL = 'speech-02-hd';
const MINIMAX = 'sse-minimax';

interface SpeechEvent {
  type?: string;
  audio?: string;
  usage?: { input_tokens: number; output_tokens: number; total_tokens: number };
  error?: { code: string; message: string };
}

/** The `data:` events of an SSE body, in order, as OpenAI's speech stream sends them. */
async function sseEvents(response: Response): Promise<SpeechEvent[]> {
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      expect(block.startsWith('data: ')).toBe(true);
      return JSON.parse(block.slice('data: '.length)) as SpeechEvent;
    });
}

const audioOf = (events: SpeechEvent[]): Buffer =>
  Buffer.concat(events.filter((e) => e.type === 'speech.audio.delta').map((e) => Buffer.from(e.audio ?? '', 'base64')));

/** OpenAI's speech SSE (decisions §10) and OpenAI's field names in errors, through the official `openai` SDK, unchanged. */
describe('OpenAI speech: stream_format "sse" and field names through the openai SDK', () => {
  let t: TestApp;
  let minimax: FakeMiniMax;
  let client: OpenAI;
  let failing: OpenAI;

  beforeAll(async () => {
    minimax = await startFakeMiniMax({ name: MINIMAX });
    const gateway = parseGatewayConfig(
      `providers:\n  - { name: ${MINIMAX}, kind: minimax, base_url: "${minimax.url}", api_key: k }\n  - { name: espeak, kind: espeak }\n`,
      'openai sse test',
    );
    t = await startApp({ gateway });
    client = new OpenAI({
      apiKey: (await t.createKey('sse', [{ provider: 'espeak', model: MODEL }])).secret,
      baseURL: `${t.url}/v1`,
      maxRetries: 0,
    });
    const mm = await t.createKey('sse minimax', [
      { provider: MINIMAX, model: MODEL, voice_map: { '*': 'English_Graceful_Lady' } },
    ]);
    failing = new OpenAI({ apiKey: mm.secret, baseURL: `${t.url}/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await t.close();
    await minimax.close();
  });
  beforeEach(() => minimax.reset());

  it('streams speech.audio.delta events of base64 audio, then speech.audio.done, that decode to the requested wav', async () => {
    const input = 'Streamed as server-sent events, the way OpenAI streams speech.';
    const response = await client.audio.speech.create({
      model: MODEL,
      input,
      voice: 'en-us',
      response_format: 'wav',
      stream_format: 'sse',
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('x-svc-provider-used')).toBe('espeak');
    const events = await sseEvents(response);
    const deltas = events.slice(0, -1);
    expect(deltas.length).toBeGreaterThan(0);
    expect(
      deltas.every((e) => e.type === 'speech.audio.delta' && typeof e.audio === 'string' && e.audio.length > 0),
    ).toBe(true);
    expect(events[events.length - 1]).toEqual({
      type: 'speech.audio.done',
      usage: { input_tokens: input.length, output_tokens: 0, total_tokens: input.length },
    });
    const wav = audioOf(events);
    const header = parseWavHeader(wav);
    // OpenAI's own output shape: 24 kHz mono
    expect(header).toMatchObject({ sampleRate: 24000, channels: 1, bitsPerSample: 16 });
    expect(pcmFrameCount(wav.length - header.dataOffset, 1) / 24000).toBeGreaterThan(1);
  });

  it('streams pcm through a MiniMax step as events too, every delta decoding to whole audio bytes', async () => {
    const response = await failing.audio.speech.create({
      model: MODEL,
      input: 'Hello from MiniMax, as events.',
      voice: 'narrator',
      response_format: 'pcm',
      stream_format: 'sse',
    });
    expect(response.headers.get('x-svc-provider-used')).toBe(MINIMAX);
    const events = await sseEvents(response);
    expect(events.filter((e) => e.type === 'speech.audio.delta').length).toBeGreaterThan(1);
    expect(events[events.length - 1].type).toBe('speech.audio.done');
    expect(audioOf(events).length).toBeGreaterThan(24000);
  });

  it('ends the event stream with an error event and no speech.audio.done when the provider fails mid-stream', async () => {
    minimax.setMode('midStreamBaseRespError');
    const response = await failing.audio.speech.create({
      model: MODEL,
      input: 'This one breaks off.',
      voice: 'narrator',
      response_format: 'mp3',
      stream_format: 'sse',
    });
    const events = await sseEvents(response);
    expect(events[0].type).toBe('speech.audio.delta');
    expect(events[events.length - 1]).toMatchObject({ error: { code: 'all_providers_failed' } });
    expect(events.some((e) => e.type === 'speech.audio.done')).toBe(false);
  });

  it("names OpenAI's fields in errors: voice, input, response_format, speed", async () => {
    const refusal = async (body: Parameters<typeof client.audio.speech.create>[0]): Promise<APIError> => {
      const err: unknown = await client.audio.speech.create(body).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(APIError);
      return err as APIError;
    };
    const voice = await refusal({ model: MODEL, input: 'x', voice: 'no-such-voice', stream_format: 'sse' });
    expect(voice).toBeInstanceOf(BadRequestError);
    expect(voice).toMatchObject({ status: 400, code: 'voice_not_found', param: 'voice' });
    expect(voice.message).not.toContain('voice_setting');
    expect(await refusal({ model: MODEL, input: 'x'.repeat(10001), voice: 'en-us' })).toMatchObject({
      status: 413,
      code: 'text_too_long',
      param: 'input',
    });
    expect(await refusal({ model: MODEL, input: 'x', voice: 'en-us', response_format: 'aac' })).toMatchObject({
      status: 400,
      param: 'response_format',
    });
    expect(await refusal({ model: MODEL, input: 'x', voice: 'en-us', speed: 4.5 })).toMatchObject({
      status: 400,
      param: 'speed',
    });
    expect(await refusal({ model: MODEL, input: '', voice: 'en-us' })).toMatchObject({ status: 400, param: 'input' });
    const stream = await refusal({ model: MODEL, input: 'x', voice: 'en-us', stream_format: 'chunks' as 'sse' });
    expect(stream).toMatchObject({ status: 400, param: 'stream_format' });
    // the MiniMax shape keeps MiniMax's names
    const minimaxShape = await fetch(`${t.url}/v1/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${client.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, text: 'x', voice_setting: { voice_id: 'no-such-voice' } }),
    });
    expect(((await minimaxShape.json()) as { error: { param: string } }).error.param).toBe('voice_setting.voice_id');
  });
});
