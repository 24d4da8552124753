import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeMiniMax, startFakeMiniMax } from './fakes/fake-minimax';
import { ADMIN_TOKEN } from './support/app';
import { ServiceProcess, spawnService } from './support/process';

jest.setTimeout(120000);

/** A real-looking MiniMax GroupId: 19 digits, which a JS number would round (to ...6800). */
const GROUP_ID = '1234567890123456789';

/**
 * The built service started with a gateway YAML as users write it: MiniMax's GroupId interpolated from the
 * environment (quoted as the shipped files now have it, and unquoted as they had it) and written as digits.
 */
describe('configuration that survives real values: a 19-digit MiniMax GroupId', () => {
  let minimax: FakeMiniMax;
  let dir: string;
  let service: ServiceProcess;
  let url: string;

  beforeAll(async () => {
    minimax = await startFakeMiniMax({ name: 'grp-minimax' });
    dir = mkdtempSync(join(tmpdir(), 'svc-group-id-'));
    const provider = (name: string, groupId: string): string =>
      `  - name: ${name}\n    kind: minimax\n    base_url: "${minimax.url}"\n    api_key: \${GRP_MINIMAX_KEY}\n    group_id: ${groupId}\n`;
    writeFileSync(
      join(dir, 'gateway.yaml'),
      'providers:\n' +
        provider('grp-env-quoted', '"${GRP_GROUP_ID}"') +
        provider('grp-env-unquoted', '${GRP_GROUP_ID}') +
        provider('grp-literal', GROUP_ID),
    );
    service = spawnService({
      SVC_CONFIG: join(dir, 'gateway.yaml'),
      SVC_ADMIN_TOKEN: ADMIN_TOKEN,
      GRP_MINIMAX_KEY: 'k',
      GRP_GROUP_ID: GROUP_ID,
      PORT: '0',
      HOST: '127.0.0.1',
    });
    [, url] = await service.waitFor(/Gateway listening on (http:\/\/\S+)/, 60000);
  });
  afterAll(async () => {
    service?.child.kill('SIGTERM');
    await service?.exited;
    await minimax?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(['grp-env-quoted', 'grp-env-unquoted', 'grp-literal'])(
    '%s: the service starts and MiniMax receives the GroupId digit for digit',
    async (provider) => {
      const created = await fetch(`${url}/v1/admin/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: provider, chain: [{ provider, model: 'speech-02-hd' }] }),
      });
      expect(created.status).toBe(201);
      const { secret } = (await created.json()) as { secret: string };
      minimax.urls.length = 0;
      const res = await fetch(`${url}/v1/t2a_v2`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'speech-02-hd',
          text: 'A GroupId of nineteen digits.',
          voice_setting: { voice_id: 'English_Graceful_Lady' },
        }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-svc-provider-used')).toBe(provider);
      expect(minimax.urls).toEqual([`/v1/t2a_v2?GroupId=${GROUP_ID}`]);
    },
  );
});
