import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../src/database/typeorm-options';
import { ENTITIES } from '../src/entities';
import { startApp } from './support/app';

describe('database schema', () => {
  it('is exactly what the entities describe once the migrations have run (no pending schema change)', async () => {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error('global setup did not provide DATABASE_URL');
    const dataSource = await new DataSource(dataSourceOptions(url, { poolSize: 1 }, ENTITIES)).initialize();
    try {
      expect(await dataSource.showMigrations()).toBe(false);
      const pending = await dataSource.driver.createSchemaBuilder().log();
      expect(pending.upQueries.map((q) => q.query)).toEqual([]);
    } finally {
      await dataSource.destroy();
    }
  });

  it('is what the service loads: every entity registered by its own module, no other', async () => {
    const { app, close } = await startApp();
    try {
      const loaded = app
        .get(DataSource)
        .entityMetadatas.map((m) => m.name)
        .sort();
      expect(loaded).toEqual(ENTITIES.map((e) => e.name).sort());
    } finally {
      await close();
    }
  });
});
