import { acquireAudioPool, audioPool, releaseAudioPool, runJob } from '../audio/pool/pool-jobs';
import type { WorkerStats } from '../audio/pool/protocol';
import type { ResolvedProvider } from '../config/gateway-config';
import { UpstreamFailure, type SpeechCall } from './provider-adapter';
import { EspeakAdapter } from './espeak.adapter';

// real synthesis in the audio worker (the compiled worker: `npm test` builds first)
jest.setTimeout(120000);

const adapter = new EspeakAdapter({ name: 'espeak', kind: 'espeak' } as ResolvedProvider);
const call = (voiceId = 'en-us', text = 'One. Two. Three. '.repeat(200)): SpeechCall => ({
  text,
  voiceId,
  speed: 1,
  vol: 1,
  pitch: 0,
  output: { format: 'flac', sampleRate: 44100, channels: 2, bitrate: 128000 },
});
const stats = (): Promise<WorkerStats> => runJob<WorkerStats>({ kind: 'stats' });

beforeAll(() => acquireAudioPool({ size: 1 }));
afterAll(() => releaseAudioPool());

describe('EspeakAdapter: the offline engine through the audio worker', () => {
  it('a FLAC stream cut short by the client ends its encoder in the worker', async () => {
    const client = new AbortController();
    const audio = await adapter.speech(call(), { model: 'speech-02-hd', signal: client.signal, requestId: 'req_test' });
    const chunks = audio.chunks[Symbol.asyncIterator]();
    expect((await chunks.next()).done).toBe(false);
    expect(await stats()).toEqual({ jobs: 1, flacEncoders: 1 });
    client.abort();
    while (!(await chunks.next()).done);
    expect(await stats()).toEqual({ jobs: 0, flacEncoders: 0 });
  });

  it("an unknown voice is the provider's 400", async () => {
    const audio = await adapter.speech(call('xx-nope'), {
      model: 'speech-02-hd',
      signal: new AbortController().signal,
      requestId: 'req_test',
    });
    const error = await audio.chunks[Symbol.asyncIterator]()
      .next()
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UpstreamFailure);
    expect((error as UpstreamFailure).outcome).toMatchObject({ kind: 'http', status: 400 });
  });

  it('a worker that dies mid-synthesis is an upstream failure of this step, and the next call succeeds', async () => {
    const audio = await adapter.speech(call(), {
      model: 'speech-02-hd',
      signal: new AbortController().signal,
      requestId: 'req_test',
    });
    const chunks = audio.chunks[Symbol.asyncIterator]();
    expect((await chunks.next()).done).toBe(false);
    process.kill(audioPool().busyPids()[0], 'SIGKILL');
    const error = await (async () => {
      while (!(await chunks.next()).done);
    })().catch((err: unknown) => err);
    expect(error).toBeInstanceOf(UpstreamFailure);
    expect((error as UpstreamFailure).outcome).toMatchObject({ kind: 'connection' });
    const again = await adapter.speech(call('en-us', 'Still here.'), {
      model: 'speech-02-hd',
      signal: new AbortController().signal,
      requestId: 'req_test',
    });
    let bytes = 0;
    for await (const chunk of again.chunks) bytes += chunk.length;
    expect(bytes).toBeGreaterThan(1000);
    expect(await adapter.acceptsVoice('en-us')).toBe(true);
  });
});
