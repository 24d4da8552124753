import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../src/database/typeorm-options';

describe('database schema', () => {
  it('is exactly what the entities describe once the migrations have run (no pending schema change)', async () => {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error('global setup did not provide DATABASE_URL');
    const dataSource = await new DataSource(dataSourceOptions(url, { poolSize: 1 })).initialize();
    try {
      expect(await dataSource.showMigrations()).toBe(false);
      const pending = await dataSource.driver.createSchemaBuilder().log();
      expect(pending.upQueries.map((q) => q.query)).toEqual([]);
    } finally {
      await dataSource.destroy();
    }
  });
});
