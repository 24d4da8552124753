import { ADMIN_TOKEN } from './support/app';
import { CHAT_PATH, chatBody, entryOf, health, streamChat } from './support/failover';
import { useStreamFailoverApp } from './support/stream-failover-app';

/**
 * What a chat stream tolerates of its upstream (decisions §3): a data event that is not JSON is skipped (at most 3 a
 * stream, counted), and a clean end after a `finish_reason` without `[DONE]` is a whole answer the gateway ends itself.
 */
describe('streaming chat: malformed events and a missing [DONE]', () => {
  const s = useStreamFailoverApp('fo-tolerance');
  const { twoStepKey } = s;

  /** svc_stream_malformed_events_total of one provider (0 before its first). */
  const malformed = async (provider: string): Promise<number> => {
    const res = await s.t.http.get('/metrics').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(res.status).toBe(200);
    const line = res.text
      .split('\n')
      .find((l) => l.startsWith('svc_stream_malformed_events_total{') && l.includes(`provider="${provider}"`));
    return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
  };

  it.each([1, 3])('skips %i data events that are not JSON: the whole text, [DONE], each counted', async (count) => {
    const { a, b, key } = await twoStepKey(`malformed ${count}`);
    a.fake.setMode('malformed', { count });
    const before = await malformed(a.name);

    const res = await streamChat(s.t, key.secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.headers.get('x-svc-provider-used')).toBe(a.name);
    expect(res.content).toBe(a.fake.replyFor('m-a'));
    expect(res.events[res.events.length - 1]).toBe('[DONE]');
    expect(res.events.filter((e) => e !== '[DONE]' && 'error' in e)).toEqual([]);
    expect(await malformed(a.name)).toBe(before + count);
    expect(a.fake.count(CHAT_PATH)).toBe(1);
    expect(b.fake.count()).toBe(0);
    expect(entryOf(await health(s.t, key.secret), a.name)).toMatchObject({
      status: 'healthy',
      consecutive_failures: 0,
    });
  });

  // with a later step that continues it, the answer goes on there: failover-continuation.e2e-spec.ts
  it('breaks a stream on its fourth data event that is not JSON: the explicit error event, no [DONE]', async () => {
    const { a, key } = await twoStepKey('malformed 4', undefined, ['none']);
    a.fake.setMode('malformed', { count: 4 });

    const res = await streamChat(s.t, key.secret, chatBody('m-a'));

    expect(res.status).toBe(200);
    expect(res.content).toBe('Hello ');
    expect(res.events).not.toContain('[DONE]');
    expect(res.events[res.events.length - 1]).toEqual({
      error: {
        message: expect.stringContaining('not JSON'),
        type: 'upstream_error',
        param: null,
        code: 'upstream_stream_failed',
      },
      provider: a.name,
    });
    expect(entryOf(await health(s.t, key.secret), a.name)).toMatchObject({ consecutive_failures: 1 });
  });

  it('ends a stream that closed cleanly after a finish_reason without [DONE] as complete, the provider healthy', async () => {
    const { a, b, key } = await twoStepKey('finish without done');
    a.fake.setMode('endWithoutDone');

    const res = await streamChat(s.t, key.secret, chatBody('m-a', { stream_options: { include_usage: true } }));

    expect(res.status).toBe(200);
    expect(res.content).toBe(a.fake.replyFor('m-a'));
    expect(res.events[res.events.length - 1]).toBe('[DONE]');
    expect(res.events.filter((e) => e !== '[DONE]' && 'error' in e)).toEqual([]);
    expect(b.fake.count()).toBe(0);
    expect(entryOf(await health(s.t, key.secret), a.name)).toEqual(
      expect.objectContaining({ status: 'healthy', consecutive_failures: 0 }),
    );
  });
});
