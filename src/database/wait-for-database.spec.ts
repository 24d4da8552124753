import { describeDatabase, isTransientConnectError, waitForDatabase } from './wait-for-database';

const refused = (): Error => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5433'), { code: 'ECONNREFUSED' });

describe('waitForDatabase', () => {
  it('retries a refused connection with growing delays, one log line per attempt, until the database answers', async () => {
    const lines: string[] = [];
    const delays: number[] = [];
    let calls = 0;
    await waitForDatabase('postgres://svc:secret@db.internal:5433/gateway', {
      log: (line) => lines.push(line),
      sleep: (ms) => {
        delays.push(ms);
        return Promise.resolve();
      },
      connect: () => (++calls <= 4 ? Promise.reject(refused()) : Promise.resolve()),
    });

    expect(calls).toBe(5);
    expect(delays).toEqual([1000, 2000, 4000, 5000]);
    expect(lines[0]).toBe(
      'waiting for the database at db.internal:5433/gateway: connect ECONNREFUSED 127.0.0.1:5433; retrying in 1 s (attempt 1)',
    );
    expect(lines[4]).toBe('database at db.internal:5433/gateway is reachable (after 5 attempts)');
    expect(lines.join('\n')).not.toContain('secret');
  });

  it('says nothing when the database answers at once', async () => {
    const lines: string[] = [];
    await waitForDatabase('postgres://localhost/x', {
      log: (line) => lines.push(line),
      connect: () => Promise.resolve(),
    });
    expect(lines).toEqual([]);
  });

  it('stops at once on an error that waiting cannot fix', async () => {
    const badPassword = Object.assign(new Error('password authentication failed for user "svc"'), { code: '28P01' });
    const sleep = jest.fn(() => Promise.resolve());
    await expect(
      waitForDatabase('postgres://svc:pw@db:5432/gateway', {
        log: () => undefined,
        sleep,
        connect: () => Promise.reject(badPassword),
      }),
    ).rejects.toThrow('Cannot use the database at db:5432/gateway: password authentication failed for user "svc"');
    expect(sleep).not.toHaveBeenCalled();
  });
});

describe('isTransientConnectError', () => {
  it.each([
    ['a refused connection', { code: 'ECONNREFUSED' }, true],
    ['a server starting up', { code: '57P03' }, true],
    ['a dropped connection', { message: 'Connection terminated unexpectedly' }, true],
    ['an unknown database', { code: '3D000' }, false],
    ['any other error', { message: 'boom' }, false],
  ])('%s', (_, err, transient) => {
    expect(isTransientConnectError(err)).toBe(transient);
  });
});

describe('describeDatabase', () => {
  it('drops the credentials and defaults the port', () => {
    expect(describeDatabase('postgresql://user:pw@pg.example/gw')).toBe('pg.example:5432/gw');
  });
});
