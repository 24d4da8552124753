import { audioFacts, collectAudio, encodedTone, splitBytes, TONE_HZ, toneSeconds } from '../../test/fakes/speech-audio';
import type { ResolvedProvider } from '../config/gateway-config';
import { type AudioFormat, contentTypeFor } from '../audio/encoders';
import { classify } from '../failover/chain';
import { SpeechCall, SpeechOutput } from './provider-adapter';
import { formatMatrix } from '../../test/support/audio';
import { MiniMaxAdapter } from './minimax.adapter';
import { wholeClipCap } from './minimax-replies';
import { outcomeOf } from '../../test/support/upstream-outcome';
import { type Answer, type RecordedCall, refusal, ScriptedExecutor } from '../../test/support/scripted-executor';

const TEXT = 'Hello there.';
const ctx = (signal: AbortSignal = new AbortController().signal) => ({
  model: 'speech-02-hd',
  signal,
  requestId: 'req_test',
});
const call = (output: Partial<SpeechOutput> = {}, extra: Partial<SpeechCall> = {}): SpeechCall => ({
  text: TEXT,
  voiceId: 'male-qn-qingse',
  speed: 1,
  vol: 1,
  pitch: 0,
  output: { format: 'pcm', sampleRate: 16000, bitrate: 128000, channels: 1, ...output },
  ...extra,
});
const provider: ResolvedProvider = {
  name: 'mm',
  kind: 'minimax',
  baseUrl: 'http://upstream.test/v1',
  apiKey: 'mm-key',
  groupId: 'grp-42',
  timeoutMs: null,
  capabilities: ['speech'],
};

const ok = { status_code: 0, status_msg: 'success' };
/** MiniMax's failure reply: HTTP 200 with a base_resp error. */
const failure = (code = 1004, message = 'login fail: Please carry the API secret key in the Authorization field') => ({
  trace_id: 'trace-1',
  base_resp: { status_code: code, status_msg: message },
});

interface T2aBody {
  text: string;
  stream: boolean;
  stream_options?: { exclude_aggregated_audio?: boolean };
  audio_setting: { sample_rate: number; channel: number; bitrate: number; format: AudioFormat };
}

/**
 * What MiniMax answers a T2A v2 call with (as the fake does): the tone in the asked shape, hex; streamed as `chunks`
 * audio events then the final one (repeating the whole clip when not excluded, or with `aggregate`), or whole.
 * `midStreamError`: one audio event, then a base_resp error event.
 */
async function t2a(
  record: RecordedCall,
  { chunks = 5, aggregate = false, midStreamError = false } = {},
): Promise<Answer> {
  const body = record.body as T2aBody;
  const { sample_rate: sampleRate, channel: channels, bitrate, format } = body.audio_setting;
  const bytes = await encodedTone(format, { sampleRate, channels, bitrate }, toneSeconds(body.text));
  const extra = { audio_sample_rate: sampleRate, audio_size: bytes.length, audio_format: format };
  if (!body.stream)
    return { json: { data: { audio: bytes.toString('hex'), status: 2 }, extra_info: extra, base_resp: ok } };
  const events = splitBytes(bytes, chunks).map((piece) =>
    JSON.stringify({ data: { audio: piece.toString('hex'), status: 1 }, base_resp: ok }),
  );
  if (midStreamError) return { events: [events[0], JSON.stringify(failure(1039, 'TPM limit'))] };
  const aggregated = aggregate || body.stream_options?.exclude_aggregated_audio !== true;
  const final = {
    data: { audio: aggregated ? bytes.toString('hex') : '', status: 2 },
    extra_info: extra,
    base_resp: ok,
  };
  return { events: [...events, JSON.stringify(final)] };
}

describe('MiniMaxAdapter: T2A v2 calls and replies (a scripted upstream)', () => {
  let upstream: ScriptedExecutor;
  let adapter: MiniMaxAdapter;

  beforeEach(() => {
    upstream = new ScriptedExecutor((record) => t2a(record));
    adapter = new MiniMaxAdapter(provider, {}, upstream);
  });

  const matrix = formatMatrix([16000, 44100]);

  it.each(matrix)(
    'returns %s at %i Hz with %i channel(s), exactly as requested',
    async (format, sampleRate, channels) => {
      const stream = await adapter.speech(call({ format, sampleRate, channels }), ctx());
      expect(stream.contentType).toBe(contentTypeFor(format, sampleRate, channels));
      const { bytes } = await collectAudio(stream.chunks);
      const facts = audioFacts(bytes, format, stream.contentType);
      expect(facts).toMatchObject({ sampleRate, channels });
      // one clip, not two: the final event's repeat of the whole clip is not appended
      if (facts.seconds !== null) expect(facts.seconds).toBeGreaterThanOrEqual(toneSeconds(TEXT) - 0.01);
      if (facts.seconds !== null) expect(facts.seconds).toBeLessThan(toneSeconds(TEXT) + 0.2);
      if (facts.frequency !== null) expect(Math.abs(facts.frequency - TONE_HZ)).toBeLessThan(5);
      const sent = upstream.only();
      // the WAVs only whole (a JSON reply), the rest as a stream
      expect(sent.op).toBe(format === 'wav' ? 'json' : 'events');
      expect(sent.body).toMatchObject({
        stream: format !== 'wav',
        audio_setting: { format, sample_rate: sampleRate, channel: channels },
      });
    },
  );

  it('sends voice_setting, audio_setting and the model with the bearer key and GroupId', async () => {
    const output = { format: 'mp3' as const, sampleRate: 32000, bitrate: 64000 };
    const voiced = call(output, { voiceId: 'English_Graceful_Lady', speed: 1.5, vol: 3, pitch: -4 });
    await collectAudio((await adapter.speech(voiced, ctx())).chunks);
    const sent = upstream.only();
    expect(sent).toMatchObject({ op: 'events', method: 'POST', path: '/t2a_v2?GroupId=grp-42' });
    expect(sent.headers).toEqual({ authorization: 'Bearer mm-key', 'content-type': 'application/json' });
    expect(sent.body).toEqual({
      model: 'speech-02-hd',
      text: TEXT,
      stream: true,
      stream_options: { exclude_aggregated_audio: true },
      voice_setting: { voice_id: 'English_Graceful_Lady', speed: 1.5, vol: 3, pitch: -4 },
      audio_setting: { sample_rate: 32000, bitrate: 64000, format: 'mp3', channel: 1 },
    });
    // an event may hold the whole clip in hex, and an error comes as one JSON reply: both bounded by the clip cap
    const cap = wholeClipCap(voiced.output);
    expect(sent.options).toEqual({ maxLineChars: cap, wholeJsonCap: cap });
  });

  it('reads a whole (wav) reply under the clip cap, without GroupId when the provider has none', async () => {
    const plain = new ScriptedExecutor((record) => t2a(record));
    await collectAudio(
      (await new MiniMaxAdapter({ ...provider, groupId: null }, {}, plain).speech(call({ format: 'wav' }), ctx()))
        .chunks,
    );
    expect(plain.only()).toMatchObject({
      op: 'json',
      path: '/t2a_v2',
      cap: wholeClipCap(call({ format: 'wav' }).output),
    });
  });

  it('reports the MP3 bitrate really encoded when it differs from the request', async () => {
    // the encoder (lamejs) needs 112 kbps for 44.1 kHz stereo
    const stream = await adapter.speech(call({ format: 'mp3', sampleRate: 44100, channels: 2, bitrate: 64000 }), ctx());
    await collectAudio(stream.chunks);
    expect(stream.bitrate).toBe(112000);
    const asked = await adapter.speech(call({ format: 'mp3', sampleRate: 32000, bitrate: 128000 }), ctx());
    await collectAudio(asked.chunks);
    expect(asked.bitrate).toBeUndefined();
  });

  it('ignores the whole-clip repeat in the final event when the upstream sends it anyway', async () => {
    upstream.answer((record) => t2a(record, { aggregate: true }));
    const { bytes } = await collectAudio((await adapter.speech(call(), ctx())).chunks);
    expect(bytes.length).toBe(Math.round(toneSeconds(TEXT) * 16000) * 2);
  });

  it("plays the final event's whole clip when no audio event came before it", async () => {
    upstream.answer(async (record) => {
      const answer = (await t2a(record, { aggregate: true })) as { events: string[] };
      return { events: answer.events.slice(-1) };
    });
    const { bytes } = await collectAudio((await adapter.speech(call(), ctx())).chunks);
    expect(bytes.length).toBe(Math.round(toneSeconds(TEXT) * 16000) * 2);
  });

  it('fails the call with provider_error when base_resp reports an error on HTTP 200', async () => {
    upstream.answer({ wholeJson: failure() });
    const outcome = await outcomeOf(() => adapter.speech(call(), ctx()));
    expect(outcome).toEqual({ kind: 'provider_error', code: 1004, message: expect.stringContaining('login fail') });
    expect(classify(outcome)).toMatchObject({ verdict: 'next', breakerFailure: true });
  });

  it('fails the call, not the stream, when the first stream event is a base_resp error', async () => {
    upstream.answer({ events: [JSON.stringify(failure(2013, 'invalid params'))] });
    expect(await outcomeOf(() => adapter.speech(call(), ctx()))).toEqual({
      kind: 'provider_error',
      code: 2013,
      message: 'invalid params',
      requestFault: true,
    });
  });

  it('fails a non-streaming (wav) call the same way, with the base_resp status code', async () => {
    upstream.answer({ json: failure(1002, 'rate limit') });
    expect(await outcomeOf(() => adapter.speech(call({ format: 'wav' }), ctx()))).toEqual({
      kind: 'provider_error',
      code: 1002,
      message: 'rate limit',
    });
  });

  it('fails a stream that ends without audio as no_audio', async () => {
    upstream.answer({ events: [JSON.stringify({ data: { audio: '', status: 2 }, extra_info: {}, base_resp: ok })] });
    expect(await outcomeOf(() => adapter.speech(call(), ctx()))).toMatchObject({
      kind: 'provider_error',
      code: 'no_audio',
    });
  });

  it('throws provider_error from the chunks when base_resp turns non-zero mid-stream', async () => {
    upstream.answer((record) => t2a(record, { midStreamError: true }));
    const stream = await adapter.speech(call(), ctx());
    const seen: Buffer[] = [];
    const outcome = await outcomeOf(async () => {
      for await (const chunk of stream.chunks) seen.push(chunk);
    });
    expect(seen.length).toBe(1);
    expect(outcome).toEqual({ kind: 'provider_error', code: 1039, message: 'TPM limit' });
  });

  it('reports an HTTP 500 as an http outcome', async () => {
    upstream.answer(refusal(500, { base_resp: { status_code: 1000, status_msg: 'mm: unknown error' } }));
    expect(await outcomeOf(() => adapter.speech(call(), ctx()))).toMatchObject({ kind: 'http', status: 500 });
  });

  it('hands over audio before the upstream has sent it all', async () => {
    const stream = await adapter.speech(call(), ctx());
    const iterator = stream.chunks[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toBeInstanceOf(Buffer);
    // the first audio event read, of five and the final one
    expect(upstream.only().read).toBe(1);
    await iterator.return?.();
    expect(upstream.only().left).toBe(true);
  });

  it('stops the upstream request when the call is aborted mid-stream', async () => {
    const controller = new AbortController();
    const stream = await adapter.speech(call(), ctx(controller.signal));
    const outcome = await outcomeOf(async () => {
      for await (const _chunk of stream.chunks) controller.abort();
    });
    expect(outcome).toMatchObject({ kind: 'connection', code: 'ABORTED' });
    expect(upstream.only()).toMatchObject({ left: true, read: 1 });
  });

  it("gives the call's own signal to the upstream: a timeout that fires while it hangs is a timeout", async () => {
    upstream.answer({ hang: true });
    const signal = AbortSignal.timeout(50);
    expect(await outcomeOf(() => adapter.speech(call(), ctx(signal)))).toEqual({ kind: 'timeout' });
    expect(upstream.only().signal).toBe(signal);
  });

  it('probes with the free system-voice listing and treats a base_resp error as sick', async () => {
    upstream.answer({ json: { voices: [], base_resp: ok } }, { json: failure() });
    await adapter.probe(AbortSignal.timeout(2000));
    expect(upstream.calls[0]).toMatchObject({
      op: 'json',
      method: 'POST',
      path: '/get_voice?GroupId=grp-42',
      body: { voice_type: 'system' },
    });
    expect(await outcomeOf(() => adapter.probe(AbortSignal.timeout(2000)))).toMatchObject({
      kind: 'provider_error',
      code: 1004,
    });
  });

  it('lists system voices; accepts system voices from a client, and raw custom ids only when the operator allowed them', async () => {
    const voices = await adapter.voices();
    expect(voices).toEqual(
      expect.arrayContaining([{ id: 'male-qn-qingse', name: expect.any(String), languages: ['zh'] }]),
    );
    expect(voices.find((v) => v.id === 'English_Graceful_Lady')?.languages).toEqual(['en']);
    for (const id of ['female-shaonv', 'Chinese (Mandarin)_News_Anchor'])
      expect(await adapter.acceptsVoice(id)).toBe(true);
    // a raw custom id of the account: no consent covers it unless the operator says so
    for (const id of ['MyVoice001', 'ttv-voice-2025082011321125-2uEN0X1S']) {
      expect(await adapter.acceptsVoice(id)).toBe(false);
      expect(await adapter.acceptsVoice(id, 'operator')).toBe(true);
    }
    const allowing = new MiniMaxAdapter({ ...provider, allowedVoiceIds: ['MyVoice001'] }, {}, new ScriptedExecutor());
    expect(await allowing.acceptsVoice('MyVoice001')).toBe(true);
    expect(await allowing.acceptsVoice('MyVoice002')).toBe(false);
    for (const id of ['', 'short1', '1starts-with-digit', 'ends-with-dash-', 'has space inside'])
      expect(await adapter.acceptsVoice(id, 'operator')).toBe(false);
  });
});
