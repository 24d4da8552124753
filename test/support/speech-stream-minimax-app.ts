import type { Test } from 'supertest';
import { parseGatewayConfig } from '../../src/config/gateway-config';
import { FakeMiniMax, startFakeMiniMax } from '../fakes/fake-minimax';
import { ADMIN_TOKEN, startApp, TestApp } from './app';

export const MODEL = 'speech-02-hd';
export const PATHS = ['/v1/audio/speech/stream', '/ws/v1/t2a_v2'];

export const bearer = (secret: string): Record<string, string> => ({ Authorization: `Bearer ${secret}` });
export const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

export interface MiniMaxStreamApps {
  t: TestApp;
  /** A second instance on the same database: a ticket from one is redeemed by the other. */
  other: TestApp;
  minimax: FakeMiniMax;
  espeakKey: { id: string; secret: string };
  minimaxKey: { id: string; secret: string };
  /** `t`'s URL as ws:. */
  ws: string;
  usage: (secret: string, query: string) => Test;
}

const gatewayYaml = (url: string): string =>
  `providers:\n  - { name: mm, kind: minimax, base_url: "${url}", api_key: k }\n  - { name: espeak, kind: espeak }\n`;

/**
 * Starts, around the calling describe, a fake MiniMax (`mm`), two gateway instances on one database and a key of each
 * provider; returns them, filled in beforeAll.
 */
export function useMiniMaxStreamApps(): MiniMaxStreamApps {
  const s = {} as MiniMaxStreamApps;
  beforeAll(async () => {
    s.minimax = await startFakeMiniMax({ name: 'mm' });
    const gateway = parseGatewayConfig(gatewayYaml(s.minimax.url), 'minimax ws test');
    // two instances on one database: a ticket from one is redeemed by the other
    s.t = await startApp({ gateway });
    s.other = await startApp({ gateway: parseGatewayConfig(gatewayYaml(s.minimax.url), 'minimax ws test b') });
    s.espeakKey = await s.t.createKey('ws espeak', [{ provider: 'espeak', model: MODEL }]);
    s.minimaxKey = await s.t.createKey('ws minimax', [
      { provider: 'mm', model: MODEL, voice_map: { '*': 'male-qn-qingse' } },
    ]);
    s.ws = s.t.url.replace('http', 'ws');
    s.usage = (secret, query) => s.t.http.get(`/v1/usage?${query}`).set(bearer(secret));
  }, 120000);
  afterAll(async () => {
    await s.other?.close();
    await s.t?.close();
    await s.minimax?.close();
  });
  return s;
}
