import { Logger } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { DomainError } from '../common/errors/domain-error';
import type { AuthenticatedKey } from '../keys/key-directory';
import { FailoverScope, type ScopeResult } from './failover-scope';
import type { FailoverService } from './failover.service';
import type { Attempt } from './attempt-records';
import { ChunkSink, openCall, Primed, ProxiedCall, withCall } from './proxied-call';

const key = { id: 'pk_test', chain: [] } as unknown as AuthenticatedKey;

/** A failover core that serves `provider` at once (or throws `fails`), recording what the call asks of it. */
function fakeCore(options: { fails?: Error } = {}) {
  const finished: ScopeResult[] = [];
  const brokeStreams: unknown[] = [];
  const core = {
    openScope: (requestId: string) => new FailoverScope(requestId, key, 'chat', (_, result) => finished.push(result)),
    execute: async <T>(scope: FailoverScope, _model: string, attempt: Attempt<T>): Promise<T> => {
      if (options.fails) throw options.fails;
      scope.served = {
        provider: 'p2',
        model: 'm',
        level: 1,
        exhausted: { provider: 'p1', reason: 'HTTP 500' },
        attempts: 2,
      };
      return attempt({} as never, {} as never, {} as never);
    },
    streamFailed: (_scope: FailoverScope, err: unknown) => {
      brokeStreams.push(err);
      return 'connection error';
    },
  };
  return { core: core as unknown as FailoverService, finished, brokeStreams };
}

/** A response that records its headers. */
function fakeResponse(): ServerResponse & { headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  return {
    headers,
    headersSent: false,
    statusCode: 200,
    setHeader: (name: string, value: string) => (headers[name] = value),
  } as unknown as ServerResponse & { headers: Record<string, string> };
}

/** Upstream chunks: each value, or an Error thrown in its place; `returned` tells whether the call was closed. */
function upstream(items: Array<string | Error>, onNext?: (i: number) => void) {
  const state = { returned: false };
  let i = 0;
  const rest: AsyncIterator<string> = {
    next: () => {
      onNext?.(i);
      const item = items[i++];
      if (item === undefined) return Promise.resolve({ done: true, value: undefined });
      return item instanceof Error ? Promise.reject(item) : Promise.resolve({ done: false, value: item });
    },
    return: () => {
      state.returned = true;
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  const attempt: Attempt<Primed<string>> = async () => ({ first: await rest.next(), rest });
  return { attempt, state };
}

/** A sink that records everything it is told. */
function recordingSink(withBroke = true) {
  const log: string[] = [];
  const sink: ChunkSink<string> = {
    open: () => void log.push('open'),
    write: (chunk) => void log.push(`write ${chunk}`),
    end: () => void log.push('end'),
    ...(withBroke ? { broke: (reason: string, status: number) => void log.push(`broke ${reason} ${status}`) } : {}),
  };
  return { sink, log };
}

describe('ProxiedCall', () => {
  beforeAll(() => {
    Logger.overrideLogger(false);
  });

  it('puts the x-svc headers of the serving step on the answer once the chain served, and records nothing yet', async () => {
    const { core, finished } = fakeCore();
    const res = fakeResponse();
    const call = new ProxiedCall(core, core.openScope('req_1', key, 'chat'), res);
    await expect(call.run('m', () => Promise.resolve('value'))).resolves.toBe('value');
    expect(res.headers['x-svc-provider-used']).toBe('p2');
    expect(res.headers['x-svc-fallback-level']).toBe('1');
    expect(JSON.parse(res.headers['x-svc-fallback-alert'])).toMatchObject({ exhausted_provider: 'p1' });
    expect(finished).toEqual([]);
    call.bill({ usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } });
    call.end();
    expect(finished).toEqual([{ status: 200, usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }]);
    // one owner ends a call, once: a second end is a bug, never a second record
    expect(() => call.end()).toThrow(/ended twice/);
    expect(() => call.endWithError(new Error('late'))).toThrow(/ended twice/);
    expect(finished).toHaveLength(1);
  });

  it("records a failure before the answer with the error's status, or 499 when the client had left", async () => {
    const refused = new DomainError('no_provider_available', 'none');
    const { core, finished } = fakeCore({ fails: refused });
    const call = new ProxiedCall(core, core.openScope('req_1', key, 'chat'), fakeResponse());
    await expect(call.run('m', () => Promise.resolve(1))).rejects.toBe(refused);
    // running it records nothing: its owner ends it
    expect(finished).toEqual([]);
    call.endWithError(refused);
    expect(finished).toEqual([{ status: 503 }]);

    const gone = fakeCore({ fails: new Error('aborted') });
    const left = new ProxiedCall(gone.core, gone.core.openScope('req_2', key, 'chat'), null);
    left.scope.abort();
    const err = await left.run('m', () => Promise.resolve(1)).catch((e: unknown) => e);
    expect(err).toEqual(new Error('aborted'));
    left.endWithError(err);
    expect(gone.finished).toEqual([{ status: 499 }]);
  });

  it('streams every chunk to the sink, ends it, records 200 with what was billed, and closes the upstream', async () => {
    const { core, finished } = fakeCore();
    const call = new ProxiedCall(core, core.openScope('req_1', key, 'speech'), null);
    const { attempt, state } = upstream(['a', 'b', 'c']);
    const { sink, log } = recordingSink();
    call.bill({ characters: 42 });
    await call.stream('m', attempt, sink);
    expect(log).toEqual(['open', 'write a', 'write b', 'write c', 'end']);
    expect(finished).toEqual([]);
    call.end();
    expect(finished).toEqual([{ status: 200, characters: 42 }]);
    expect(state.returned).toBe(true);
  });

  it('stops when the client leaves mid-stream: 499, no end, the upstream closed, the breaker not told', async () => {
    const { core, finished, brokeStreams } = fakeCore();
    const call = new ProxiedCall(core, core.openScope('req_1', key, 'speech'), null);
    const { attempt, state } = upstream(['a', 'b', 'c'], (i) => i === 2 && call.scope.abort());
    const { sink, log } = recordingSink();
    await call.stream('m', attempt, sink);
    expect(log).toEqual(['open', 'write a', 'write b']);
    call.end();
    expect(finished).toEqual([{ status: 499 }]);
    expect(state.returned).toBe(true);
    expect(brokeStreams).toEqual([]);
  });

  it('a provider that breaks after the first byte: the breaker is told, the sink ends the answer, 502 is recorded', async () => {
    const { core, finished, brokeStreams } = fakeCore();
    const call = new ProxiedCall(core, core.openScope('req_1', key, 'chat'), null);
    const cut = new Error('socket hang up');
    const { attempt } = upstream(['a', cut]);
    const { sink, log } = recordingSink();
    await call.stream('m', attempt, sink);
    expect(log).toEqual(['open', 'write a', 'broke connection error 502']);
    expect(brokeStreams).toEqual([cut]);
    // the stream's verdict is kept: the route returned normally, and its owner's end records the break
    call.end();
    expect(finished).toEqual([{ status: 502 }]);
  });

  it('relays a continuation the sink supplies after a break: its chunks, the end, 200; both upstreams closed', async () => {
    const { core, finished, brokeStreams } = fakeCore();
    const call = new ProxiedCall(core, core.openScope('req_1', key, 'chat'), null);
    const cut = new Error('socket hang up');
    const broken = upstream(['a', cut]);
    const continuing = upstream(['b', 'c']);
    const { sink, log } = recordingSink();
    const reasons: string[] = [];
    sink.continueAfter = async (_err, reason) => {
      reasons.push(reason);
      const rest = await continuing.attempt({} as never, {} as never, {} as never);
      return reasons.length === 1 ? rest : null;
    };
    await call.stream('m', broken.attempt, sink);
    expect(log).toEqual(['open', 'write a', 'write b', 'write c', 'end']);
    expect(reasons).toEqual(['connection error']);
    expect(brokeStreams).toEqual([cut]);
    call.end();
    expect(finished).toEqual([{ status: 200 }]);
    expect([broken.state.returned, continuing.state.returned]).toEqual([true, true]);
  });

  it('ends the answer with broke when the sink finds no continuation', async () => {
    const { core, finished } = fakeCore();
    const call = new ProxiedCall(core, core.openScope('req_1', key, 'chat'), null);
    const { attempt } = upstream(['a', new Error('socket hang up')]);
    const { sink, log } = recordingSink();
    sink.continueAfter = () => Promise.resolve(null);
    await call.stream('m', attempt, sink);
    expect(log).toEqual(['open', 'write a', 'broke connection error 502']);
    call.end();
    expect(finished).toEqual([{ status: 502 }]);
  });

  it("throws the break back to a sink that cannot end the answer itself, and records the gateway's own verdict with its status", async () => {
    const { core, finished } = fakeCore();
    const call = new ProxiedCall(core, core.openScope('req_1', key, 'speech'), null);
    const tooLong = new DomainError('audio_too_long', 'over the cap');
    const { attempt } = upstream(['a', tooLong]);
    const { sink } = recordingSink(false);
    await expect(call.stream('m', attempt, sink)).rejects.toBe(tooLong);
    call.endWithError(tooLong);
    expect(finished).toEqual([{ status: 413 }]);
  });

  it("withCall ends the call it runs once, with the error it throws or the stream's verdict", async () => {
    const { core, finished } = fakeCore();
    const refused = new DomainError('no_provider_available', 'none');
    const refusing = fakeCore({ fails: refused });
    const failing = openCall(refusing.core, 'req_0', key, 'speech', new AbortController().signal);
    await expect(withCall(failing, (c) => c.run('m', () => Promise.resolve(1)))).rejects.toBe(refused);
    expect(refusing.finished).toEqual([{ status: 503 }]);
    const call = openCall(core, 'req_1', key, 'speech', new AbortController().signal);
    await withCall(call, (c) => c.stream('m', upstream(['a', new Error('cut')]).attempt, recordingSink().sink));
    expect(finished).toEqual([{ status: 502 }]);
  });

  it('openCall: the signal cancels the call, and its listener is removed once the call is recorded', async () => {
    const { core, finished } = fakeCore();
    const controller = new AbortController();
    const call = openCall(core, 'req_1', key, 'speech', controller.signal);
    const { attempt } = upstream(['a']);
    await withCall(call, (c) => c.stream('m', attempt, recordingSink().sink));
    expect(finished).toEqual([{ status: 200 }]);
    controller.abort();
    expect(call.aborted).toBe(false);

    const cancelled = openCall(core, 'req_2', key, 'speech', controller.signal);
    expect(cancelled.aborted).toBe(true);
  });
});
