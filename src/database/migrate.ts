import { DataSource, MigrationExecutor } from 'typeorm';

/** Any fixed number shared by every replica: the session advisory lock that serialises migrations. */
const MIGRATION_LOCK = 7_310_432_901;

/**
 * Runs pending migrations while holding a PostgreSQL advisory lock, so replicas that start together
 * on one database migrate one after another instead of racing (TypeORM takes no lock itself). The
 * lock and the migrations share one connection, which also works on the one-session embedded database.
 */
export async function runMigrationsExclusively(dataSource: DataSource): Promise<void> {
  const runner = dataSource.createQueryRunner();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      const executor = new MigrationExecutor(dataSource, runner);
      executor.transaction = dataSource.options.migrationsTransactionMode ?? 'each';
      await executor.executePendingMigrations();
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    await runner.release();
  }
}
