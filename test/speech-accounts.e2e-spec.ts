import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { startApp, TestApp } from './support/app';
import { speak, SPEECH_PATH } from './support/speech';

jest.setTimeout(120000);

const MODEL = 'speech-02-hd';
const body = {
  model: MODEL,
  text: 'Two accounts, one provider.',
  voice_setting: { voice_id: 'English_Graceful_Lady' },
  audio_setting: { format: 'mp3', sample_rate: 32000, channel: 1, bitrate: 128000 },
};

/** A MiniMax provider with two accounts (decisions §7): each call sends its account's key and GroupId. */
describe('speech on a provider with accounts', () => {
  let t: TestApp;
  let minimax: FakeMiniMax;
  let secret: string;

  beforeAll(async () => {
    minimax = await startFakeMiniMax({ name: 'acc-minimax' });
    const gateway = parseGatewayConfig(
      `providers:
  - name: acc-minimax
    kind: minimax
    base_url: "${minimax.url}"
    group_id: "111"
    queue_timeout_ms: 100
    accounts:
      - { name: one, api_key: key-one, max_concurrency: 1 }
      - { name: two, api_key: key-two, group_id: "222", max_concurrency: 1 }
  - { name: acc-espeak, kind: espeak }
`,
      'speech accounts test',
    );
    t = await startApp({ gateway });
    secret = (
      await t.createKey('speech accounts', [
        { provider: 'acc-minimax', model: MODEL },
        { provider: 'acc-espeak', model: MODEL },
      ])
    ).secret;
  });
  afterAll(async () => {
    await t?.close();
    await minimax?.close();
  });

  it('holds each account for a whole stream, sends its own key and GroupId, and skips a third call to the next step', async () => {
    minimax.reset();
    minimax.urls.length = 0;
    minimax.chunkDelayMs = 400;
    const open = () =>
      fetch(`${t.url}${SPEECH_PATH}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    // both answers have their headers (their first audio): the two streams are under way
    const streams = await Promise.all([open(), open()]);
    expect(streams.map((r) => r.headers.get('x-svc-provider-used'))).toEqual(['acc-minimax', 'acc-minimax']);
    const third = await speak(t, secret, body);
    expect(third.status).toBe(200);
    expect(third.headers.get('x-svc-provider-used')).toBe('acc-espeak');
    await Promise.all(streams.map((r) => r.arrayBuffer()));
    expect(minimax.requests.map((r) => r.headers.authorization).sort()).toEqual(['Bearer key-one', 'Bearer key-two']);
    expect(minimax.urls.map((u) => new URL(u, 'http://x').searchParams.get('GroupId')).sort()).toEqual(['111', '222']);
    // once the streams ended their slots are free again
    minimax.chunkDelayMs = 0;
    const after = await speak(t, secret, body);
    expect(after.headers.get('x-svc-provider-used')).toBe('acc-minimax');
  });
});
