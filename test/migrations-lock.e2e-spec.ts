import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../migrations';
import { runMigrationsExclusively } from '../src/database/migrate';
import { dataSourceOptions } from '../src/database/typeorm-options';
import { adminQuery, baseDatabaseUrl, withDatabase } from './support/database';

describe('migrations at start', () => {
  const name = `svc_migrate_${Date.now()}_${process.pid}`;
  const admin = withDatabase(baseDatabaseUrl(), 'postgres');
  const url = withDatabase(baseDatabaseUrl(), name);

  beforeAll(() => adminQuery(admin, `CREATE DATABASE "${name}"`));
  afterAll(() => adminQuery(admin, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));

  it('run once in all when several replicas start together on an empty database', async () => {
    const replicas = await Promise.all(
      [1, 2, 3].map(() => new DataSource(dataSourceOptions(url, { poolSize: 1 })).initialize()),
    );
    try {
      // pool size 1: the lock and the migrations must share a connection (as on the embedded database)
      const outcomes = await Promise.allSettled(replicas.map((dataSource) => runMigrationsExclusively(dataSource)));
      expect(outcomes.map((o) => (o.status === 'rejected' ? String(o.reason) : 'ok'))).toEqual(['ok', 'ok', 'ok']);
      const applied: Array<{ name: string }> = await replicas[0].query('SELECT name FROM migrations ORDER BY id');
      expect(applied.map((m) => m.name)).toEqual(MIGRATIONS.map((m) => m.name));
      for (const dataSource of replicas) expect(await dataSource.showMigrations()).toBe(false);
    } finally {
      await Promise.all(replicas.map((dataSource) => dataSource.destroy()));
    }
  });
});
