import { Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { EnvironmentVariables } from '../config/env.schema';
import { SecretBox } from './secret-box';

/** The key file of the embedded mode, beside its database files. */
export const KEY_FILE = 'secret.key';

export class PlaintextSecretsRefused extends Error {
  constructor() {
    super(
      'SVC_SECRET_KEY is not set, so webhook signing secrets would be stored in plaintext in the database. ' +
        "Make a key with `node -e \"console.log(require('crypto').randomBytes(32).toString('base64url'))\"` " +
        '(or `openssl rand -base64 32`), set it as SVC_SECRET_KEY on every replica, and keep it; ' +
        'or set SVC_ALLOW_PLAINTEXT_SECRETS=true to store them unencrypted.',
    );
    this.name = 'PlaintextSecretsRefused';
  }
}

/** The embedded mode's own key: read from the data directory, made there (mode 0600) on the first start. */
function embeddedKey(dataDir: string): string {
  const dir = resolve(dataDir);
  const file = join(dir, KEY_FILE);
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  }
  chmodSync(file, 0o600);
  return readFileSync(file, 'utf8').trim();
}

/**
 * Where endpoint secrets get their encryption key: SVC_SECRET_KEY; else, with the embedded database,
 * a key file in its data directory; else (a PostgreSQL server) the start is refused unless
 * SVC_ALLOW_PLAINTEXT_SECRETS=true says plaintext is wanted.
 */
export function secretBoxFor(env: EnvironmentVariables, embedded: boolean): SecretBox {
  if (env.SVC_SECRET_KEY) return SecretBox.fromPassphrase(env.SVC_SECRET_KEY);
  if (embedded) return SecretBox.fromPassphrase(embeddedKey(env.SVC_DATA_DIR));
  if (!env.SVC_ALLOW_PLAINTEXT_SECRETS) throw new PlaintextSecretsRefused();
  new Logger('Webhooks').warn('SVC_ALLOW_PLAINTEXT_SECRETS=true: webhook signing secrets are stored unencrypted');
  return SecretBox.fromPassphrase(undefined);
}
