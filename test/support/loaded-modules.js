// Boots the built gateway in this process, makes speech in every format through it, and prints the
// files Node's module cache holds (what the gateway's own process loaded). Used by licenses.e2e-spec.ts.
'use strict';
const { join } = require('node:path');
const root = join(__dirname, '..', '..');
process.env.PORT = '0';
process.env.HOST = '127.0.0.1';
process.env.LOG_LEVEL = 'silent';
process.env.SVC_ADMIN_TOKEN = 'loaded-modules-admin-token-0123456789';
process.env.SVC_CONFIG = join(root, 'config', 'gateway.yaml');

async function main() {
  const { NestFactory } = require('@nestjs/core');
  const { AppModule } = require(join(root, 'dist/src/app.module'));
  const { APP_OPTIONS, setupApp } = require(join(root, 'dist/src/app.setup'));
  const app = setupApp(await NestFactory.create(AppModule, { ...APP_OPTIONS, logger: false }));
  await app.listen(0, '127.0.0.1');
  const base = `http://127.0.0.1:${app.getHttpServer().address().port}`;
  const admin = { Authorization: `Bearer ${process.env.SVC_ADMIN_TOKEN}`, 'Content-Type': 'application/json' };
  const chain = [{ provider: 'espeak', model: 'speech-02-hd' }];
  const key = await (
    await fetch(`${base}/v1/admin/keys`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ name: 'licences', chain }),
    })
  ).json();
  const statuses = [];
  for (const format of ['mp3', 'flac', 'wav', 'pcm']) {
    const res = await fetch(`${base}/v1/audio/speech`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key.secret}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        model: 'speech-02-hd',
        text: 'Licences are kept apart.',
        voice_setting: { voice_id: 'en-us' },
        audio_setting: { format },
      }),
    });
    statuses.push([format, res.status, (await res.arrayBuffer()).byteLength]);
  }
  process.stdout.write(JSON.stringify({ statuses, loaded: Object.keys(require.cache) }));
  await app.close();
  process.exit(0);
}
main().catch((err) => {
  process.stderr.write(String(err && err.stack));
  process.exit(1);
});
