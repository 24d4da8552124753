import type { RealtimeSessionCreateRequest } from 'openai/resources/realtime/realtime';
import { FakeOpenAiRealtime, startFakeOpenAiRealtime } from '../../test/fakes/fake-openai-realtime';
import { toneSeconds } from '../../test/fakes/speech-audio';
import { collectChunks, outcomeOf } from '../../test/support/upstream-outcome';
import { CallAbort, type CallSignal } from '../common/call-signal';
import { isRealtimeModel, RealtimeCall, realtimePcm, realtimeUrl } from './openai-realtime';
import { UpstreamFailure } from './provider-adapter';

const SESSION: RealtimeSessionCreateRequest = {
  type: 'realtime',
  output_modalities: ['audio'],
  audio: { output: { format: { type: 'audio/pcm', rate: 24000 }, voice: 'marin' } },
};

describe('which openai models speak through the Realtime API', () => {
  it.each([
    ['gpt-realtime-2.1-mini', true],
    ['gpt-realtime', true],
    ['gpt-realtime-mini-2025-12-15', true],
    ['gpt-4o-realtime-preview', true],
    ['gpt-4o-mini-realtime-preview-2024-12-17', true],
    ['gpt-4o-mini-tts', false],
    ['tts-1-hd', false],
    ['gpt-5.4-mini', false],
    ['realtime', false],
  ])('%s → %s', (model, realtime) => {
    expect(isRealtimeModel(model)).toBe(realtime);
  });
});

describe('the Realtime URL', () => {
  it('is the base URL with /realtime and the model, as a WebSocket URL', () => {
    expect(realtimeUrl('https://api.openai.com/v1', 'gpt-realtime-2.1-mini')).toBe(
      'wss://api.openai.com/v1/realtime?model=gpt-realtime-2.1-mini',
    );
    expect(realtimeUrl('http://127.0.0.1:4010/v1/', 'gpt-realtime')).toBe(
      'ws://127.0.0.1:4010/v1/realtime?model=gpt-realtime',
    );
    expect(realtimeUrl('https://proxy.example/openai/v1', 'a b')).toBe(
      'wss://proxy.example/openai/v1/realtime?model=a+b',
    );
  });
});

describe('a Realtime speech session against a fake Realtime server', () => {
  let fake: FakeOpenAiRealtime;

  beforeAll(async () => {
    fake = await startFakeOpenAiRealtime();
  });
  afterEach(() => fake.reset());
  afterAll(() => fake.close());

  const call = (pieces: string[], signal: CallSignal = new AbortController().signal): RealtimeCall => ({
    url: realtimeUrl(fake.url, 'gpt-realtime-2.1-mini'),
    apiKey: 'sk-up',
    session: SESSION,
    pieces,
    signal,
    idleMs: 5000,
  });
  const bytesOf = (chunks: Buffer[]): number => chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  const pcmBytes = (text: string): number => Math.round(24000 * toneSeconds(text)) * 2;

  it('sends the session, then each piece as its own response, and yields every PCM delta', async () => {
    const pieces = ['First piece of text.', 'Second one.'];
    const { values, error } = await collectChunks(realtimePcm(call(pieces))[Symbol.asyncIterator]());
    expect(error).toBeNull();
    expect(bytesOf(values)).toBe(pcmBytes(pieces[0]) + pcmBytes(pieces[1]));
    expect(values.length).toBe(2 * fake.audioChunks);
    const [session] = fake.sessions;
    expect(session).toMatchObject({
      model: 'gpt-realtime-2.1-mini',
      authorization: 'Bearer sk-up',
      session: SESSION,
      texts: pieces,
      responses: 2,
    });
    await waitFor(() => session.closed);
  });

  it("puts an attempt's trace headers on the upgrade (decisions §12), and none while traces are off", async () => {
    const traced = new CallAbort();
    traced.traceHeaders = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    const untraced = new CallAbort();
    await drain(realtimePcm(call(['Traced.'], traced)));
    await drain(realtimePcm(call(['Not traced.'], untraced)));
    await drain(realtimePcm(call(['No attempt.'])));
    expect(fake.sessions.map((s) => s.headers.traceparent)).toEqual([
      '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      undefined,
      undefined,
    ]);
    expect(fake.sessions.map((s) => s.headers.authorization)).toEqual(Array(3).fill('Bearer sk-up'));
  });

  it('fails over on an error event before any audio: a provider error of the provider', async () => {
    fake.mode = 'errorBeforeAudio';
    expect(await outcomeOf(() => drain(realtimePcm(call(['Hi.']))))).toEqual({
      kind: 'provider_error',
      code: 'server_error',
      message: 'The server had an error',
    });
  });

  it('fails with a connection failure when the socket closes before any audio', async () => {
    fake.mode = 'closeBeforeAudio';
    expect(await outcomeOf(() => drain(realtimePcm(call(['Hi.']))))).toMatchObject({
      kind: 'connection',
      code: 'REALTIME_CLOSED',
    });
  });

  it('breaks the stream after its first audio when the socket closes', async () => {
    fake.mode = 'closeAfterFirstAudio';
    const { values, error } = await collectChunks(realtimePcm(call(['Hello there.']))[Symbol.asyncIterator]());
    expect(values).toHaveLength(1);
    expect(error).toBeInstanceOf(UpstreamFailure);
    expect((error as UpstreamFailure).outcome).toMatchObject({ kind: 'connection', code: 'REALTIME_CLOSED' });
  });

  it('reports a refused upgrade as the HTTP status with OpenAI’s message', async () => {
    fake.mode = 'refuse401';
    expect(await outcomeOf(() => drain(realtimePcm(call(['Hi.']))))).toMatchObject({
      kind: 'http',
      status: 401,
      message: 'Incorrect API key provided.',
      error: { type: 'invalid_request_error', code: 'invalid_api_key' },
    });
  });

  it('closes the socket when the call is aborted mid-stream', async () => {
    fake.chunkDelayMs = 300;
    const controller = new AbortController();
    const outcome = await outcomeOf(async () => {
      for await (const _chunk of realtimePcm(call(['Hello there.'], controller.signal))) controller.abort();
    });
    expect(outcome).toMatchObject({ kind: 'connection', code: 'ABORTED' });
    await waitFor(() => fake.sessions[0]?.closed === true);
  });

  it('ends with the step timeout when the server never answers', async () => {
    fake.mode = 'silent';
    const outcome = await outcomeOf(() => drain(realtimePcm(call(['Hi.'], AbortSignal.timeout(200)))));
    expect(outcome).toEqual({ kind: 'timeout' });
    await waitFor(() => fake.sessions[0]?.closed === true);
  });

  it('goes silent past the idle bound: a connection failure, socket closed', async () => {
    fake.mode = 'silent';
    const outcome = await outcomeOf(() => drain(realtimePcm({ ...call(['Hi.']), idleMs: 150 })));
    expect(outcome).toMatchObject({ kind: 'connection', code: 'STREAM_IDLE' });
    await waitFor(() => fake.sessions[0]?.closed === true);
  });
});

/** Every chunk; what the iterator throws is thrown on (for outcomeOf). */
async function drain(chunks: AsyncIterable<Buffer>): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const chunk of chunks) out.push(chunk);
  return out;
}

async function waitFor(predicate: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
