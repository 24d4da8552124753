import type { INestApplication } from '@nestjs/common';
import type { AddressInfo } from 'node:net';
import { AdminToken } from './common/auth/admin-token';
import { DatabaseEndpoint } from './database/database-endpoint';
import { KeysBootstrap } from './keys/keys.bootstrap';
import { EnvironmentVariables } from './config/env.schema';

/** What a person starting the service needs: where it is, and the credentials made for them. */
export function printBanner(app: INestApplication): void {
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
    ...(env.SVC_DOCS ? [`  Swagger UI:       ${base}/docs`, `  OpenAPI document: ${base}/openapi.json`] : []),
    `  Database:         ${app.get(DatabaseEndpoint).isEmbedded ? `embedded PostgreSQL in ${env.SVC_DATA_DIR}` : 'DATABASE_URL'}`,
  ];
  if (admin.generated && admin.value) lines.push(`  Admin token (this run only; set SVC_ADMIN_TOKEN to fix it): ${admin.value}`);
  if (demoSecret) lines.push(`  Demo key (shown once, keep it): ${demoSecret}`);
  process.stdout.write(`${lines.join('\n')}\n\n`);
}
