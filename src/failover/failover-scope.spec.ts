import type { AuthenticatedKey } from '../keys/key-directory';
import { FailoverScope } from './failover-scope';

const key = { id: 'pk_test', chain: [] } as unknown as AuthenticatedKey;
const scope = (): FailoverScope => new FailoverScope('req_1', key, 'chat', () => undefined);

describe('FailoverScope client-gone signal', () => {
  it('tells listeners once when the client goes away, with the reason', () => {
    const s = scope();
    const heard: string[] = [];
    s.onAbort((reason) => heard.push(reason.message));
    expect(s.aborted).toBe(false);
    s.abort();
    s.abort();
    expect(s.aborted).toBe(true);
    expect(heard).toEqual(['client disconnected']);
  });

  it('calls a listener added after the client left at once', () => {
    const s = scope();
    s.abort();
    const heard: string[] = [];
    s.onAbort((reason) => heard.push(reason.message));
    expect(heard).toEqual(['client disconnected']);
  });

  it('hands out a signal that is aborted whether asked for before or after the client left', () => {
    const early = scope();
    const signal = early.signal;
    expect(signal.aborted).toBe(false);
    early.abort();
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).message).toBe('client disconnected');

    const late = scope();
    late.abort();
    expect(late.signal.aborted).toBe(true);
    expect(late.signal).toBe(late.signal);
  });

  it('forgets a listener when told to', () => {
    const s = scope();
    const heard: string[] = [];
    const stop = s.onAbort(() => heard.push('x'));
    stop();
    s.abort();
    expect(heard).toEqual([]);
  });

  it('announces every failover of a lone request, and each fallback provider once across a shared set', () => {
    const lone = scope();
    expect([lone.announceFailover('b'), lone.announceFailover('b')]).toEqual([true, true]);
    const announced = new Set<string>();
    const [first, second] = [scope(), scope()];
    first.failoversAnnounced = announced;
    second.failoversAnnounced = announced;
    expect([first.announceFailover('b'), second.announceFailover('b'), second.announceFailover('c')]).toEqual([
      true,
      false,
      true,
    ]);
  });
});
