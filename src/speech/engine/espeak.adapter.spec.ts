import type { ResolvedProvider } from '../../config/gateway-config';
import type { SpeechCall } from '../../failover/provider-adapter';
import { liveFlacEncoders } from '../audio/flac';
import { EspeakAdapter } from './espeak.adapter';
import type { EspeakEngine, SynthesizedAudio } from './espeak-engine';

/** Half a second of a tone per sentence group, as the engine's `stream` hands them out; `fail` throws after the first. */
function fakeEngine(groups: number, fail = false): EspeakEngine {
  const samples = Int16Array.from({ length: 8000 }, (_, i) => Math.round(8000 * Math.sin(i / 10)));
  return {
    async *stream(): AsyncGenerator<SynthesizedAudio> {
      for (let i = 0; i < groups; i++) {
        if (fail && i === 1) throw new Error('engine crashed');
        yield await Promise.resolve({ samples, sampleRate: 16000, channels: 1 });
      }
    },
  } as unknown as EspeakEngine;
}

const call: SpeechCall = { text: 'One. Two. Three.', voiceId: 'en-us', speed: 1, vol: 1, pitch: 0, output: { format: 'flac', sampleRate: 16000, channels: 1, bitrate: 128000 } };

async function flacStream(engine: EspeakEngine, signal = new AbortController().signal): Promise<AsyncIterator<Buffer>> {
  const adapter = new EspeakAdapter({ name: 'espeak', kind: 'espeak' } as ResolvedProvider, engine);
  const audio = await adapter.speech(call, { model: 'speech-02-hd', signal, requestId: 'req_test' });
  return audio.chunks[Symbol.asyncIterator]();
}

describe('EspeakAdapter: a FLAC stream cut short still ends its encoder (libflac memory is never given back otherwise)', () => {
  it('when the client leaves mid-text', async () => {
    const before = liveFlacEncoders();
    const client = new AbortController();
    const chunks = await flacStream(fakeEngine(5), client.signal);
    expect((await chunks.next()).done).toBe(false);
    expect(liveFlacEncoders()).toBe(before + 1);
    client.abort();
    expect((await chunks.next()).done).toBe(true);
    expect(liveFlacEncoders()).toBe(before);
  });

  it('when the consumer stops reading', async () => {
    const before = liveFlacEncoders();
    const chunks = await flacStream(fakeEngine(5));
    expect((await chunks.next()).done).toBe(false);
    await chunks.return?.();
    expect(liveFlacEncoders()).toBe(before);
  });

  it('when the engine fails', async () => {
    const before = liveFlacEncoders();
    const chunks = await flacStream(fakeEngine(5, true));
    expect((await chunks.next()).done).toBe(false);
    await expect(chunks.next()).rejects.toThrow('engine crashed');
    expect(liveFlacEncoders()).toBe(before);
  });

  it('and once on a stream read to its end', async () => {
    const before = liveFlacEncoders();
    const chunks = await flacStream(fakeEngine(3));
    const out: Buffer[] = [];
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) out.push(next.value);
    expect(Buffer.concat(out).toString('latin1', 0, 4)).toBe('fLaC');
    expect(liveFlacEncoders()).toBe(before);
  });
});
