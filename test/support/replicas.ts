import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import type { ChainStepDto } from '../../src/config/chain-step.dto';
import { ADMIN_TOKEN } from './app';
import { spawnService, ServiceProcess } from './process';
import { isolatedDatabase } from './receiver';

/** One provider line of a gateway YAML. */
export interface ProviderEntry {
  name: string;
  kind: string;
  /** API root of its fake (omitted for the built-in echo and espeak). */
  url?: string;
}

/** One built service process (`node dist/src/main.js`) of the set. */
export interface Replica {
  label: string;
  url: string;
  http: ReturnType<typeof request>;
  service: ServiceProcess;
}

export interface ReplicaSet {
  replicas: Replica[];
  /** A connection of the test's own to the set's database, for counting rows. */
  db: Client;
  createKey(via: Replica, name: string, chain: ChainStepDto[]): Promise<{ id: string; secret: string }>;
  close(): Promise<void>;
}

export const gatewayYaml = (providers: ProviderEntry[]): string =>
  [
    'providers:',
    ...providers.map(
      (p) => `  - name: ${p.name}\n    kind: ${p.kind}${p.url ? `\n    base_url: ${p.url}\n    api_key: x` : ''}`,
    ),
  ].join('\n');

const STOP_GRACE_MS = 30000;
const START_TIMEOUT_MS = 90000;

/** The URL the replica prints once it listens; a replica that dies while starting (a bad build) fails at once, with its output. */
function listeningUrl(service: ServiceProcess, label: string): Promise<string> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const match = /Gateway listening on (http:\/\/\S+)/.exec(service.output());
      if (match) return resolve(match[1]);
      if (service.child.exitCode !== null || service.child.signalCode !== null)
        return reject(new Error(`replica ${label} exited before listening:\n${service.output()}`));
      if (Date.now() - started > START_TIMEOUT_MS)
        return reject(new Error(`replica ${label} not listening after ${START_TIMEOUT_MS} ms:\n${service.output()}`));
      setTimeout(check, 100);
    };
    check();
  });
}

/**
 * `count` built services on ports of their own over one fresh database of their own (no other test
 * file's app takes their jobs), started one after the other so only the first runs the migrations.
 * Every replica runs its own schedulers, job workers, change feed and pool. Build first (`npx nest build`).
 */
export async function startReplicas(
  label: string,
  providers: ProviderEntry[],
  env: Record<string, string | undefined> = {},
  count = 2,
): Promise<ReplicaSet> {
  const database = await isolatedDatabase(label);
  const dir = mkdtempSync(join(tmpdir(), `svc-${label}-`));
  writeFileSync(join(dir, 'gateway.yaml'), gatewayYaml(providers));
  const services: ServiceProcess[] = [];
  const replicas: Replica[] = [];
  const db = new Client({ connectionString: database.url });
  const close = async (): Promise<void> => {
    for (const service of services) service.child.kill('SIGTERM');
    const timer = setTimeout(() => services.forEach((service) => service.child.kill('SIGKILL')), STOP_GRACE_MS);
    await Promise.all(services.map((service) => service.exited));
    clearTimeout(timer);
    await db.end().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    await database.drop();
  };
  try {
    for (let i = 0; i < count; i++) {
      const service = spawnService({
        DATABASE_URL: database.url,
        PORT: '0',
        HOST: '127.0.0.1',
        SVC_ADMIN_TOKEN: ADMIN_TOKEN,
        SVC_CONFIG: join(dir, 'gateway.yaml'),
        // the production interval: what other replicas learn fast, they learn by NOTIFY
        SVC_SYNC_INTERVAL_MS: undefined,
        ...env,
      });
      services.push(service);
      const label = String.fromCharCode(65 + i);
      const url = await listeningUrl(service, label);
      replicas.push({ label, url, http: request(url), service });
    }
    await db.connect();
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
  return {
    replicas,
    db,
    close,
    async createKey(via, name, chain) {
      const res = await via.http
        .post('/v1/admin/keys')
        .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
        .send({ name, chain });
      if (res.status !== 201)
        throw new Error(`key creation on ${via.label} failed: ${res.status} ${JSON.stringify(res.body)}`);
      return { id: res.body.id as string, secret: res.body.secret as string };
    },
  };
}
