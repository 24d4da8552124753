import { Pool } from 'undici';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CallAbort } from './call-signal';

describe('CallAbort', () => {
  it('calls each listener once, in order, with the reason set, and none removed or added after', () => {
    const abort = new CallAbort();
    const seen: string[] = [];
    const removed = (): void => void seen.push('removed');
    abort.addEventListener('abort', () => seen.push(`first ${String(abort.reason)}`));
    abort.addEventListener('abort', removed);
    abort.addEventListener('abort', () => seen.push(`second ${String(abort.aborted)}`));
    abort.removeEventListener('abort', removed);
    abort.abort('gone');
    abort.abort('again');
    abort.addEventListener('abort', () => seen.push('late'));
    expect(seen).toEqual(['first gone', 'second true']);
    expect(abort.reason).toBe('gone');
  });

  describe('as the signal of an undici request', () => {
    let server: Server;
    let pool: Pool;
    beforeAll(async () => {
      // answers only after a second: the request is cancelled long before
      server = createServer((_req, res) => void setTimeout(() => res.end('late'), 1000).unref());
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    });
    afterAll(async () => {
      await pool.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });

    it('cancels the call in flight with its reason', async () => {
      const abort = new CallAbort();
      const reason = new Error('step timeout');
      const pending = pool.request({ method: 'GET', path: '/', signal: abort });
      setTimeout(() => abort.abort(reason), 20);
      await expect(pending).rejects.toBe(reason);
    });

    it('refuses to start a call already cancelled', async () => {
      const abort = new CallAbort();
      abort.abort(new Error('client gone'));
      await expect(pool.request({ method: 'GET', path: '/', signal: abort })).rejects.toThrow('client gone');
    });
  });
});
