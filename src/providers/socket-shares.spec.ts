import { CallAbort } from '../common/call-signal';
import { UpstreamFailure } from './provider-adapter';
import { SocketShares, tenantOf } from './socket-shares';

/** Queues a call of `tenant`, recording when it starts (or why it was refused) in `log`. */
function queue(shares: SocketShares, tenant: string, log: string[], signal = new CallAbort()): CallAbort {
  signal.tenant = tenant;
  shares.wait(
    tenant,
    signal,
    () => log.push(`start ${tenant}`),
    (failure) => log.push(`refused ${tenant}: ${JSON.stringify(failure.outcome)}`),
  );
  return signal;
}

describe('SocketShares', () => {
  it('gives one key at most its share, leaving the rest of the pool to others', () => {
    const shares = SocketShares.of(8, 0.5);
    for (let i = 0; i < 4; i++) expect(shares.tryTake('w')).toBe(true);
    expect(shares.tryTake('w')).toBe(false);
    for (let i = 0; i < 4; i++) expect(shares.tryTake('g')).toBe(true);
    expect(shares.tryTake('h')).toBe(false); // the pool is full
  });

  it('holds at least one socket per key and never more than the pool', () => {
    expect(SocketShares.of(4, 0.01).perKey).toBe(1);
    expect(SocketShares.of(4, 1).perKey).toBe(4);
  });

  it('hands a returned socket to a waiting call of a key within its share, round-robin across keys', () => {
    const shares = SocketShares.of(2, 1);
    const log: string[] = [];
    expect(shares.tryTake('w')).toBe(true);
    expect(shares.tryTake('w')).toBe(true);
    queue(shares, 'w', log);
    queue(shares, 'w', log);
    queue(shares, 'g', log);
    shares.release('w');
    shares.release('w');
    // w's first waiter, then g's (w went to the back after its turn), not both of w's
    expect(log).toEqual(['start w', 'start g']);
    expect(shares.stats()).toEqual({ inUse: 2, waiting: 1 });
  });

  it('does not hand a key more than its share while its calls wait', () => {
    const shares = SocketShares.of(4, 0.5);
    const log: string[] = [];
    shares.tryTake('w');
    shares.tryTake('w');
    queue(shares, 'w', log);
    shares.tryTake('g');
    shares.release('g');
    expect(log).toEqual([]);
    shares.release('w');
    expect(log).toEqual(['start w']);
  });

  it('notes the wait on the attempt and calls a deadline that passes while waiting local', () => {
    const shares = SocketShares.of(1, 1);
    const log: string[] = [];
    shares.tryTake('w');
    const signal = queue(shares, 'w', log);
    expect(signal.waitingSince).toBeGreaterThan(0);
    expect(tenantOf(signal)).toBe('w');
    const timeout = new Error('timeout');
    timeout.name = 'TimeoutError';
    signal.abort(timeout);
    expect(log).toEqual([`refused w: ${JSON.stringify({ kind: 'timeout', local: true })}`]);
    expect(signal.waitingSince).toBe(0);
    shares.release('w');
    expect(shares.stats()).toEqual({ inUse: 0, waiting: 0 });
  });

  it('refuses a call whose client left as a cancel, and one already cancelled at once', () => {
    const shares = SocketShares.of(1, 1);
    const log: string[] = [];
    shares.tryTake('w');
    queue(shares, 'w', log).abort(new Error('client gone'));
    const gone = new CallAbort();
    gone.abort(new UpstreamFailure({ kind: 'connection', code: 'X' }));
    queue(shares, 'g', log, gone);
    expect(log).toEqual([
      `refused w: ${JSON.stringify({ kind: 'connection', code: 'ABORTED', message: 'request cancelled' })}`,
      `refused g: ${JSON.stringify({ kind: 'connection', code: 'X' })}`,
    ]);
  });
});
