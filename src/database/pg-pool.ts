import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

/**
 * The `pg` pool under TypeORM's DataSource: for pg-boss, and for the few hot statements where
 * TypeORM's per-query work (a query runner per call) costs more than the statement.
 */
export function pgPoolOf(dataSource: DataSource): Pool {
  return (dataSource.driver as PostgresDriver).master as Pool;
}
