import type {
  RealtimeClientEvent,
  RealtimeServerEvent,
  RealtimeSessionCreateRequest,
} from 'openai/resources/realtime/realtime';
import { type PeerSide, refusal, ScriptedExecutor, type ScriptedPeer } from '../../test/support/scripted-executor';
import { collectChunks, outcomeOf } from '../../test/support/upstream-outcome';
import type { CallSignal } from '../common/call-signal';
import { isRealtimeModel, type RealtimeCall, realtimePath, realtimePcm } from './openai-realtime';
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

describe('the Realtime path', () => {
  it('is /realtime under the base URL with the model as its query', () => {
    expect(realtimePath('gpt-realtime-2.1-mini')).toBe('/realtime?model=gpt-realtime-2.1-mini');
    expect(realtimePath('a b')).toBe('/realtime?model=a+b');
  });
});

type Mode = 'ok' | 'errorBeforeAudio' | 'closeBeforeAudio' | 'closeAfterFirstAudio' | 'silent';
const AUDIO_CHUNKS = 5;
/** The PCM a piece is read as: its bytes differ per piece, so order and completeness both show. */
const pcmOf = (text: string): Buffer => Buffer.from(`pcm:${text}`.repeat(40));
const deltas = (pcm: Buffer): Buffer[] =>
  Array.from({ length: AUDIO_CHUNKS }, (_, i) =>
    pcm.subarray(Math.floor((i * pcm.length) / AUDIO_CHUNKS), Math.floor(((i + 1) * pcm.length) / AUDIO_CHUNKS)),
  );

/** A Realtime server as a scripted peer: what the fake Realtime server answers (test/fakes/fake-openai-realtime.ts). */
function realtimePeer(mode: Mode): ScriptedPeer {
  let text = '';
  const event = (side: PeerSide, e: RealtimeServerEvent): void => side.send(e);
  const place = { response_id: 'resp_1', item_id: 'item_1', output_index: 0, content_index: 0 };
  return {
    open: (side) => event(side, { type: 'session.created', event_id: 'ev_0', session: { type: 'realtime' } }),
    message: (raw, side) => {
      const e = JSON.parse(raw) as RealtimeClientEvent;
      if (e.type === 'session.update' && e.session.type === 'realtime')
        event(side, { type: 'session.updated', event_id: 'ev_1', session: e.session });
      else if (e.type === 'conversation.item.create' && e.item.type === 'message')
        text = e.item.content.map((part) => part.text ?? '').join('');
      else if (e.type === 'response.create') {
        if (mode === 'silent') return;
        if (mode === 'errorBeforeAudio')
          return event(side, {
            type: 'error',
            event_id: 'ev_2',
            error: { type: 'server_error', code: 'server_error', message: 'The server had an error' },
          });
        if (mode === 'closeBeforeAudio') return side.close();
        for (const [i, delta] of deltas(pcmOf(text)).entries()) {
          event(side, {
            type: 'response.output_audio.delta',
            event_id: `ev_d${i}`,
            ...place,
            delta: delta.toString('base64'),
          });
          if (mode === 'closeAfterFirstAudio') return side.close();
        }
        event(side, {
          type: 'response.done',
          event_id: 'ev_3',
          response: { id: 'resp_1', object: 'realtime.response', status: 'completed' },
        });
      }
    },
  };
}

describe('a Realtime speech session over a scripted executor socket', () => {
  const call = (pieces: string[], signal: CallSignal = new AbortController().signal): RealtimeCall => ({
    model: 'gpt-realtime-2.1-mini',
    headers: { authorization: 'Bearer sk-up' },
    session: SESSION,
    pieces,
    signal,
  });
  const run = (mode: Mode): ScriptedExecutor => new ScriptedExecutor().answer({ peer: realtimePeer(mode) });
  const sentEvents = (upstream: ScriptedExecutor): RealtimeClientEvent[] =>
    (upstream.only().sent ?? []).map((text) => JSON.parse(text) as RealtimeClientEvent);

  it('sends the session, then each piece as its own response, and yields every PCM delta', async () => {
    const upstream = run('ok');
    const pieces = ['First piece of text.', 'Second one.'];
    const { values, error } = await collectChunks(realtimePcm(upstream, call(pieces))[Symbol.asyncIterator]());
    expect(error).toBeNull();
    expect(Buffer.concat(values)).toEqual(Buffer.concat([pcmOf(pieces[0]), pcmOf(pieces[1])]));
    expect(values.length).toBe(2 * AUDIO_CHUNKS);
    const socket = upstream.only();
    expect(socket).toMatchObject({
      op: 'socket',
      path: '/realtime?model=gpt-realtime-2.1-mini',
      headers: { authorization: 'Bearer sk-up' },
      closedCode: 'REALTIME_CLOSED',
      left: true,
    });
    const ask = (text: string): RealtimeClientEvent[] => [
      {
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
      },
      { type: 'response.create', response: { output_modalities: ['audio'] } },
    ];
    expect(sentEvents(upstream)).toEqual([
      { type: 'session.update', session: SESSION },
      ...ask(pieces[0]),
      ...ask(pieces[1]),
    ]);
  });

  it('sends the session and the first piece on open, before any server event is read', async () => {
    const upstream = new ScriptedExecutor().answer({ peer: {} }); // a server that never says a word
    const pcm = realtimePcm(upstream, call(['One.', 'Two.']));
    void pcm.next().catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(upstream.only().read).toBe(0);
    expect(sentEvents(upstream).map((e) => e.type)).toEqual([
      'session.update',
      'conversation.item.create',
      'response.create',
    ]);
    await pcm.return(undefined);
    expect(upstream.only().left).toBe(true);
  });

  it('fails over on an error event before any audio: a provider error of the provider', async () => {
    expect(await outcomeOf(() => drain(realtimePcm(run('errorBeforeAudio'), call(['Hi.']))))).toEqual({
      kind: 'provider_error',
      code: 'server_error',
      message: 'The server had an error',
    });
  });

  it('fails with a connection failure when the socket closes before any audio', async () => {
    expect(await outcomeOf(() => drain(realtimePcm(run('closeBeforeAudio'), call(['Hi.']))))).toMatchObject({
      kind: 'connection',
      code: 'REALTIME_CLOSED',
    });
  });

  it('breaks the stream after its first audio when the socket closes', async () => {
    const chunks = realtimePcm(run('closeAfterFirstAudio'), call(['Hello there.']));
    const { values, error } = await collectChunks(chunks[Symbol.asyncIterator]());
    expect(values).toHaveLength(1);
    expect(error).toBeInstanceOf(UpstreamFailure);
    expect((error as UpstreamFailure).outcome).toMatchObject({ kind: 'connection', code: 'REALTIME_CLOSED' });
  });

  it('reports a refused upgrade as the HTTP status with OpenAI’s message', async () => {
    const body = {
      error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' },
    };
    const upstream = new ScriptedExecutor().answer(refusal(401, body));
    expect(await outcomeOf(() => drain(realtimePcm(upstream, call(['Hi.']))))).toMatchObject({
      kind: 'http',
      status: 401,
      message: 'Incorrect API key provided.',
      error: { type: 'invalid_request_error', code: 'invalid_api_key' },
    });
    expect(upstream.only().sent).toEqual([]);
  });

  it('closes the socket when the call is aborted mid-stream', async () => {
    const upstream = run('ok');
    const controller = new AbortController();
    const outcome = await outcomeOf(async () => {
      for await (const _chunk of realtimePcm(upstream, call(['Hello there.'], controller.signal))) controller.abort();
    });
    expect(outcome).toMatchObject({ kind: 'connection', code: 'ABORTED' });
    expect(upstream.only().left).toBe(true);
  });

  it('ends with the step timeout when the server never answers', async () => {
    const upstream = run('silent');
    const outcome = await outcomeOf(() => drain(realtimePcm(upstream, call(['Hi.'], AbortSignal.timeout(200)))));
    expect(outcome).toEqual({ kind: 'timeout' });
    expect(upstream.only().left).toBe(true);
  });

  it("goes silent past the executor's idle bound: a connection failure, socket closed", async () => {
    const upstream = run('silent');
    const socket = upstream.socket.bind(upstream);
    // the idle bound is the executor's (the step's or the provider's); here this socket's is short
    upstream.socket = (c) => socket({ ...c, idleMs: 150 });
    const outcome = await outcomeOf(() => drain(realtimePcm(upstream, call(['Hi.']))));
    expect(outcome).toMatchObject({ kind: 'connection', code: 'STREAM_IDLE' });
    expect(upstream.only().left).toBe(true);
  });
});

/** Every chunk; what the iterator throws is thrown on (for outcomeOf). */
async function drain(chunks: AsyncIterable<Buffer>): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const chunk of chunks) out.push(chunk);
  return out;
}
