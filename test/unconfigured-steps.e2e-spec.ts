import { Logger } from '@nestjs/common';
import { parseGatewayConfig } from '../src/config/gateway-config';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { startApp, TestApp } from './support/app';
import { speak } from './support/speech';

jest.setTimeout(120000);

const MODEL = 'speech-02-hd';
const OTHER_MODEL = 'speech-2.6-hd';

/** The gateway YAML of this file; `minimaxKey` empty leaves `uc-minimax` out, as an unset `${MINIMAX_API_KEY}` does. */
const gatewayYaml = (failingUrl: string, minimaxUrl: string, minimaxKey: string): string =>
  [
    'providers:',
    '  - { name: espeak, kind: espeak }',
    `  - { name: uc-failing, kind: minimax, base_url: "${failingUrl}", api_key: k }`,
    `  - { name: uc-minimax, kind: minimax, base_url: "${minimaxUrl}", api_key: "${minimaxKey}" }`,
  ].join('\n');

/**
 * A chain step whose provider is no longer configured (issue 17.5): keys made while it was, then a restart with
 * its api_key unset. The boot warns by key and step, health says `configured: false`, and errors name the step.
 */
describe('chain steps whose provider is not configured', () => {
  let t: TestApp;
  let failing: FakeMiniMax;
  let minimax: FakeMiniMax;
  let warnings: string[];
  const secrets: Record<string, string> = {};
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    [failing, minimax] = await Promise.all([
      startFakeMiniMax({ name: 'uc-failing', mode: 'http500' }),
      startFakeMiniMax({ name: 'uc-minimax' }),
    ]);
    const before = await startApp({
      gateway: parseGatewayConfig(gatewayYaml(failing.url, minimax.url, 'k'), 'configured'),
    });
    try {
      for (const [name, chain] of Object.entries({
        fallback: [
          { provider: 'uc-failing', model: MODEL },
          { provider: 'uc-minimax', model: MODEL },
        ],
        entry: [
          { provider: 'uc-minimax', model: OTHER_MODEL },
          { provider: 'espeak', model: MODEL },
        ],
      })) {
        const key = await before.createKey(`uc ${name}`, chain);
        secrets[name] = key.secret;
        ids[name] = key.id;
      }
    } finally {
      await before.close();
    }
    const warn = jest.spyOn(Logger.prototype, 'warn');
    try {
      t = await startApp({ gateway: parseGatewayConfig(gatewayYaml(failing.url, minimax.url, ''), 'api_key unset') });
      warnings = warn.mock.calls.map((call) => String(call[0]));
    } finally {
      warn.mockRestore();
    }
  });
  afterAll(async () => {
    await t.close();
    await Promise.all([failing.close(), minimax.close()]);
  });

  it('warns at boot, naming the key and the step', () => {
    expect(warnings).toContain(
      `key 'uc fallback' (${ids.fallback}): step chain[1] (provider 'uc-minimax', model '${MODEL}') is skipped: its provider is not configured (its api_key is empty)`,
    );
    expect(warnings).toContain(
      `key 'uc entry' (${ids.entry}): step chain[0] (provider 'uc-minimax', model '${OTHER_MODEL}') is skipped: its provider is not configured (its api_key is empty)`,
    );
  });

  it('reports the provider down with configured:false in health, the configured ones with configured:true', async () => {
    const res = await t.http.get('/v1/providers/health').set('Authorization', `Bearer ${secrets.fallback}`);
    expect(res.status).toBe(200);
    expect(res.body.providers).toEqual([
      {
        provider: 'uc-failing',
        status: expect.any(String),
        consecutive_failures: expect.any(Number),
        cooldown_remaining_secs: expect.any(Number),
        configured: true,
      },
      {
        provider: 'uc-minimax',
        status: 'down',
        consecutive_failures: 0,
        cooldown_remaining_secs: 0,
        configured: false,
      },
    ]);
    expect(res.body.overall).not.toBe('operational');
  });

  it('names the unconfigured step in model_not_supported', async () => {
    const res = await speak(t, secrets.entry, {
      model: OTHER_MODEL,
      text: 'Hello.',
      voice_setting: { voice_id: 'en-us' },
    });
    expect(res.status).toBe(400);
    const error = (
      JSON.parse(res.bytes.toString('utf8')) as { error: { code: string; param: string; message: string } }
    ).error;
    expect(error).toMatchObject({ code: 'model_not_supported', param: 'model' });
    expect(error.message).toContain(
      `Step chain[0] (provider 'uc-minimax', model '${OTHER_MODEL}') was skipped: its provider is not configured (its api_key is empty).`,
    );
  });

  it('names the unconfigured fallback step when every other step failed', async () => {
    const res = await speak(t, secrets.fallback, {
      model: MODEL,
      text: 'Hello.',
      voice_setting: { voice_id: 'male-qn-qingse' },
    });
    expect(res.status).toBe(502);
    const error = (JSON.parse(res.bytes.toString('utf8')) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('all_providers_failed');
    expect(error.message).toContain('uc-failing (HTTP 500)');
    expect(error.message).toContain(
      `Step chain[1] (provider 'uc-minimax', model '${MODEL}') was skipped: its provider is not configured (its api_key is empty).`,
    );
    expect(minimax.count()).toBe(0);
  });
});
