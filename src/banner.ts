import type { INestApplication } from '@nestjs/common';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { AdminToken } from './auth/admin-token';
import { DatabaseEndpoint } from './database/database-endpoint';
import { PinoLogger } from 'nestjs-pino';
import { symbols } from 'pino';
import { GatewayConfig } from './config/gateway-config';
import type { ChainStepDto } from './config/chain-step.dto';
import { demoChain, KeysBootstrap } from './keys/keys.bootstrap';
import { EnvironmentVariables } from './config/env.schema';

/** What a person starting the service needs: where it is, and the credentials made for them. */
function bannerText(app: INestApplication): string {
  const env = app.get(EnvironmentVariables);
  const host = env.HOST === '0.0.0.0' || env.HOST === '::' ? 'localhost' : env.HOST;
  const server = app.getHttpServer() as { address(): AddressInfo };
  const { port } = server.address();
  const base = `http://${host}:${port}`;
  const admin = app.get(AdminToken);
  const demoSecret = app.get(KeysBootstrap).demoSecret;
  const lines = [
    '',
    `  Gateway listening on ${base}`,
    `  Console:          ${base}/console/`,
    ...(env.SVC_DOCS ? [`  Swagger UI:       ${base}/docs`, `  OpenAPI document: ${base}/openapi.json`] : []),
    `  Database:         ${app.get(DatabaseEndpoint).isEmbedded ? `embedded PostgreSQL in ${env.SVC_DATA_DIR}` : 'DATABASE_URL'}`,
  ];
  if (admin.generated && admin.value)
    lines.push(`  Admin token (this run only; set SVC_ADMIN_TOKEN to fix it): ${admin.value}`);
  if (demoSecret) lines.push(`  Demo key (shown once, keep it): ${demoSecret}`);
  else lines.push(...makeKeyLines(app, base, admin));
  return `${lines.join('\n')}\n\n`;
}

/**
 * How to make a key without the demo key, each line a command that works as printed (a test runs them): the
 * embedded database is held by the service, so there the CLI runs once it is stopped; on a PostgreSQL server it
 * runs beside the service, which learns of the new key at once.
 */
function makeKeyLines(app: INestApplication, base: string, admin: AdminToken): string[] {
  const embedded = app.get(DatabaseEndpoint).isEmbedded;
  const chain = JSON.stringify(chainExample(app));
  const cli = `${cliEnvironment(app.get(EnvironmentVariables), embedded)}npm run keys -- create --name my-app --chain '${chain}'`;
  // double quotes: the shell expands $SVC_ADMIN_TOKEN (the configured token is not printed)
  const token = admin.generated && admin.value ? admin.value : '$SVC_ADMIN_TOKEN';
  const curl = `curl -s ${base}/v1/admin/keys -H "Authorization: Bearer ${token}" -H 'Content-Type: application/json' -d '{"name":"my-app","chain":${chain}}'`;
  return [
    '  No demo key this start (keys exist, or SVC_DEMO_KEY is off). Make a key:',
    embedded
      ? `    CLI (in the project, once this service is stopped): ${cli}`
      : `    CLI (beside the service, with its DATABASE_URL set): ${cli}`,
    admin.value
      ? `    admin API${admin.generated ? '' : ' (with SVC_ADMIN_TOKEN set)'}: ${curl}`
      : '    admin API: off (set SVC_ADMIN_TOKEN and restart to turn it on)',
  ];
}

/** The settings the CLI must share with this service when they are not the defaults (npm runs it in the project root). */
function cliEnvironment(env: EnvironmentVariables, embedded: boolean): string {
  const defaults = new EnvironmentVariables();
  const shared: Array<[string, string]> = [];
  if (embedded && env.SVC_DATA_DIR !== defaults.SVC_DATA_DIR) shared.push(['SVC_DATA_DIR', resolve(env.SVC_DATA_DIR)]);
  if (env.SVC_CONFIG !== defaults.SVC_CONFIG) shared.push(['SVC_CONFIG', resolve(env.SVC_CONFIG)]);
  const quoted = (value: string): string => (/^[\w./:@-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`);
  return shared.map(([name, value]) => `${name}=${quoted(value)} `).join('');
}

/**
 * The banner goes out after the start-up log lines, so it is the last thing on screen. The log lines leave in
 * blocks (and a flush ends at the first write done, which may leave a line behind it), so the banner is written
 * into the same stream, behind them, then flushed.
 */
export function printBannerAfterLogs(app: INestApplication): void {
  const text = bannerText(app);
  const root = PinoLogger.root as unknown as Record<symbol, unknown> | undefined;
  const stream = root?.[symbols.streamSym] as { write?: (chunk: string) => unknown; flush?: () => void } | undefined;
  if (!stream?.write || !stream.flush) {
    process.stdout.write(text);
    return;
  }
  stream.write(text);
  stream.flush();
}

/** The demo chain of this configuration, as an example of a chain (echo and espeak offline). */
function chainExample(app: INestApplication): ChainStepDto[] {
  const chain = demoChain(app.get(GatewayConfig));
  return chain.length > 0 ? chain : [{ provider: 'echo', model: 'echo-1' }];
}
