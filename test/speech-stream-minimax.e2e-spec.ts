import { parseFirstMp3Frame } from '../src/audio/parse';
import { eventually } from './support/failover';
import { speakLikeMiniMaxClient } from './support/minimax-ws-client';
import { refusedUpgrade, StreamClient } from './support/ws-client';
import { bearer, MODEL, PATHS, useMiniMaxStreamApps } from './support/speech-stream-minimax-app';

// The speech WebSocket as MiniMax's own clients speak it; its tickets, revocation and the usage of async tasks:
// speech-stream-tickets.e2e-spec.ts.

const TEXTS = ['Hello there.', 'This is the second thing I say.', 'And a third, short one.'];
const SUCCESS = { status_code: 0, status_msg: 'success' };

/** Every server message of a connection carries the envelope of decisions §7. */
function expectEnvelope(client: StreamClient, baseResp: object = SUCCESS): void {
  const sessionId = client.messages[0].session_id;
  expect(sessionId).toMatch(/^sess_/);
  const traceId = client.upgradeHeaders['x-svc-request-id'];
  expect(traceId).toMatch(/^req_/);
  for (const m of client.messages) {
    expect(m).toMatchObject({ session_id: sessionId, trace_id: traceId });
    expect(m.base_resp).toEqual(m.event === 'task_failed' ? baseResp : SUCCESS);
  }
}

/** The speech WebSocket as MiniMax's own clients speak it (decisions §7, §10). */
describe('speech WebSocket: MiniMax clients', () => {
  const s = useMiniMaxStreamApps();

  it("sends MiniMax's optional task_start fields to a MiniMax step as the client sent them", async () => {
    s.minimax.reset();
    const extra = { language_boost: 'English', voice_modify: { pitch: 10, intensity: -5 }, aigc_watermark: true };
    const { client } = await speakLikeMiniMaxClient(
      `${s.ws}${PATHS[1]}`,
      bearer(s.minimaxKey.secret),
      { event: 'task_start', model: MODEL, voice_setting: { voice_id: 'male-qn-qingse', emotion: 'calm' }, ...extra },
      ['Fields travel with every text.'],
      // this test is about the fields, not the pace (the tests below time it): the file's first synthesis may meet
      // a cold process, so it is given more than a MiniMax client's 2 s
      10000,
    );
    expect(client.closeCode).toBe(1000);
    const sent = s.minimax.requests
      .filter((r) => r.path === '/v1/t2a_v2')
      .map((r) => r.body as Record<string, unknown>);
    expect(sent.length).toBeGreaterThan(0);
    for (const body of sent)
      expect(body).toMatchObject({ ...extra, voice_setting: { voice_id: 'male-qn-qingse', emotion: 'calm' } });
  });

  describe.each([
    ['espeak', () => s.espeakKey],
    ['the MiniMax upstream', () => s.minimaxKey],
  ])('a client that waits for is_final after every task_continue, on %s', (_, key) => {
    it.each(PATHS)(
      'gets each text answered with is_final and extra_info within 2 s, three times, on %s',
      async (path) => {
        const { client, utterances, started } = await speakLikeMiniMaxClient(
          `${s.ws}${path}`,
          bearer(key().secret),
          {
            event: 'task_start',
            model: MODEL,
            voice_setting: { voice_id: 'en-us' },
            audio_setting: { format: 'mp3', sample_rate: 32000, channel: 1 },
          },
          TEXTS,
        );
        expect(client.closeCode).toBe(1000);
        expectEnvelope(client);
        const traceId = client.upgradeHeaders['x-svc-request-id'] as string;
        expect(started.request_id).toBe(traceId);
        expect(utterances).toHaveLength(3);
        utterances.forEach((u, i) => {
          // exactly the last message of each text is final, and it carries audio and MiniMax's extra_info
          expect(u.messages.map((m) => m.is_final)).toEqual([...u.messages.slice(1).map(() => false), true]);
          expect(u.audio.length).toBeGreaterThan(0);
          for (const m of u.messages) expect(m.request_id).toBe(`${traceId}_${i + 1}`);
          const last = u.messages[u.messages.length - 1];
          expect(last.extra_info).toEqual({
            audio_length: expect.any(Number),
            audio_sample_rate: 32000,
            audio_size: u.audio.length,
            audio_format: 'mp3',
            audio_channel: 1,
            usage_characters: u.text.length,
            bitrate: 128000,
          });
          expect((last.extra_info as { audio_length: number }).audio_length).toBeGreaterThan(100);
          expect(parseFirstMp3Frame(u.audio).sampleRate).toBe(32000);
        });
        // nothing after the last is_final but task_finished
        expect(client.messages[client.messages.length - 1].event).toBe('task_finished');

        // the usage of the stream is found by its trace_id, and of each text by that text's request_id
        const all = await eventually(
          () => s.usage(key().secret, `request_id=${traceId}`),
          (res) => res.status === 200 && res.body.data.length === 3,
          5000,
          'usage of the stream',
        );
        expect((all.body.data as Array<{ request_id: string }>).map((r) => r.request_id)).toEqual(
          [1, 2, 3].map((n) => `${traceId}_${n}`),
        );
        const second = await s.usage(key().secret, `request_id=${traceId}_2`);
        expect(second.body.data).toEqual([
          expect.objectContaining({ request_id: `${traceId}_2`, characters: TEXTS[1].length, status: 200 }),
        ]);
      },
    );
  });

  it('answers a text that makes no audio with an is_final message too (empty audio), so the client is not left waiting', async () => {
    const { utterances } = await speakLikeMiniMaxClient(
      `${s.ws}${PATHS[1]}`,
      bearer(s.espeakKey.secret),
      { event: 'task_start', model: MODEL, voice_setting: { voice_id: 'en-us' } },
      ['   ', 'Now words.'],
    );
    expect(utterances[0].messages).toEqual([
      expect.objectContaining({
        is_final: true,
        data: { audio: '' },
        extra_info: expect.objectContaining({ audio_size: 0, audio_length: 0 }),
      }),
    ]);
    expect(utterances[1].audio.length).toBeGreaterThan(0);
  });

  it.each([
    [
      'an invalid parameter',
      { event: 'task_start', model: MODEL, voice_setting: { voice_id: 'en-us', speed: 9 } },
      'invalid_value',
      2013,
    ],
    [
      'an unknown voice',
      { event: 'task_start', model: MODEL, voice_setting: { voice_id: 'no-such-voice' } },
      'voice_not_found',
      2013,
    ],
  ])('puts MiniMax status code on task_failed for %s', async (_, start, code, status) => {
    const client = await StreamClient.connect(`${s.ws}${PATHS[1]}`, bearer(s.espeakKey.secret));
    client.send(start);
    const failed = await client.waitFor((m) => m.event === 'task_failed');
    expect(failed.error).toMatchObject({ code });
    expect((failed.base_resp as { status_code: number }).status_code).toBe(status);
    expect(await client.closed).toBe(1008);
    expectEnvelope(client, failed.base_resp as object);
  });

  it('answers an upgrade on an unknown path with 404 in the error shape, without echoing the query', async () => {
    const refused = await refusedUpgrade(`${s.ws}/v1/audio/speech/streams?api_key=${s.espeakKey.secret}`);
    expect(refused.status).toBe(404);
    expect(refused.requestId).toMatch(/^req_/);
    expect(JSON.parse(refused.body)).toMatchObject({
      error: {
        type: 'not_found_error',
        code: 'route_not_found',
        message: expect.stringContaining('/v1/audio/speech/streams'),
      },
    });
    expect(refused.body).not.toContain(s.espeakKey.secret);
    expect(refused.body).not.toContain('api_key');
  });
});
