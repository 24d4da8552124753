import { parseGatewayConfig } from '../../src/config/gateway-config';
import { FakeMiniMax, startFakeMiniMax } from '../fakes/fake-minimax';
import { startApp, TestApp } from './app';

export const SYNC_SPEECH_MODEL = 'speech-02-hd';

/** The app of the synchronous speech specs: echo, espeak and a fake MiniMax (`sp-sync-minimax`), and an espeak key. */
export async function startSyncSpeechApp(): Promise<{
  t: TestApp;
  secret: string;
  minimax: FakeMiniMax;
  close: () => Promise<void>;
}> {
  const minimax = await startFakeMiniMax({ name: 'sp-sync-minimax' });
  const gateway = parseGatewayConfig(
    [
      'providers:',
      '  - { name: echo, kind: echo }',
      '  - { name: espeak, kind: espeak }',
      `  - { name: sp-sync-minimax, kind: minimax, base_url: "${minimax.url}", api_key: k }`,
    ].join('\n'),
    'sync speech test',
  );
  const t = await startApp({ gateway });
  const secret = (await t.createKey('sync speech', [{ provider: 'espeak', model: SYNC_SPEECH_MODEL }])).secret;
  const close = async (): Promise<void> => {
    await t.close();
    await minimax.close();
  };
  return { t, secret, minimax, close };
}
