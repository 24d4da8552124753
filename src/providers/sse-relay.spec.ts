import { Readable } from 'node:stream';
import { relaySse, SseEvent, StreamStep, UpstreamBody } from './http';
import { UpstreamFailure } from './provider-adapter';
import { collectChunks } from '../../test/support/upstream-outcome';

/** A body of these network reads that records whether it was drained (socket kept) or destroyed. */
function bodyOf(reads: string[]): { body: UpstreamBody; drained: () => boolean } {
  const readable = Readable.from(
    reads.map((r) => Buffer.from(r)),
    { objectMode: false },
  );
  let drained = false;
  Object.assign(readable, {
    dump: () => {
      drained = true;
      return Promise.resolve();
    },
  });
  return { body: readable as unknown as UpstreamBody, drained: () => drained };
}

const signal = new AbortController().signal;
const translate = (event: SseEvent): StreamStep<string> => {
  if (event.data === '[DONE]') return 'end';
  if (event.data === 'skip') return undefined;
  if (event.data === 'bad') throw new UpstreamFailure({ kind: 'provider_error', code: 'stream_error' });
  return event.data;
};

describe('relaySse', () => {
  it('hands out the chunks of every read in order, skips what the translator drops, and drains the body after the end marker', async () => {
    const { body, drained } = bodyOf([
      'data: a\n\ndata: skip\n\ndata: b\n',
      '\ndata: c\n\ndata: [DONE]\n\n',
      'data: late\n\n',
    ]);
    const events = relaySse(body, signal, translate);
    expect(await collectChunks(events)).toEqual({ values: ['a', 'b', 'c'], error: null });
    expect(drained()).toBe(true);
    expect(body.destroyed).toBe(false);
    expect(await events.next()).toEqual({ done: true, value: undefined });
  });

  it('gives the chunks before a fault in the same read first, then the fault, and destroys the body', async () => {
    const { body, drained } = bodyOf(['data: a\n\ndata: b\n\ndata: bad\n\ndata: never\n\n']);
    const { values, error } = await collectChunks(relaySse(body, signal, translate));
    expect(values).toEqual(['a', 'b']);
    expect(error).toBeInstanceOf(UpstreamFailure);
    expect((error as UpstreamFailure).outcome).toMatchObject({ code: 'stream_error' });
    expect(drained()).toBe(false);
    expect(body.destroyed).toBe(true);
  });

  it('fails a body that ends before its end marker as STREAM_TRUNCATED, after the chunks it had (an unclosed last event included)', async () => {
    const { body } = bodyOf(['data: a\n\n', 'data: b\n']);
    const { values, error } = await collectChunks(relaySse(body, signal, translate));
    expect(values).toEqual(['a', 'b']);
    expect((error as UpstreamFailure).outcome).toMatchObject({ kind: 'connection', code: 'STREAM_TRUNCATED' });
    expect(body.destroyed).toBe(true);
  });

  it('destroys the body when the consumer stops early, and is done from then on', async () => {
    const { body, drained } = bodyOf(['data: a\n\ndata: b\n\n', 'data: [DONE]\n\n']);
    const events = relaySse(body, signal, translate);
    expect(await events.next()).toEqual({ done: false, value: 'a' });
    expect(await events.return(undefined)).toEqual({ done: true, value: undefined });
    expect(body.destroyed).toBe(true);
    expect(drained()).toBe(false);
    expect(await events.next()).toEqual({ done: true, value: undefined });
  });

  it('can be delegated to from an async generator (yield*)', async () => {
    const { body } = bodyOf(['data: a\n\ndata: [DONE]\n\n']);
    async function* wrapped(): AsyncGenerator<string> {
      yield 'first';
      yield* relaySse(body, signal, translate);
    }
    expect(await collectChunks(wrapped())).toEqual({ values: ['first', 'a'], error: null });
  });
});
