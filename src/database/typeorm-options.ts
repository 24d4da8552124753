import type { DataSourceOptions } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { TypeOrmServiceLogger } from './typeorm-logger';

export interface DatabaseTuning {
  /** Connections in the pool; the embedded database takes exactly one (PGlite is one session). */
  poolSize: number;
  /**
   * Deadline of one statement on the server (`statement_timeout`), 0 or unset for none; the client
   * gives up 1 s later (`query_timeout`: a server that cannot even answer its own cancellation).
   * Unset for migrations, the TypeORM CLI and the embedded database (it runs in this process).
   */
  statementTimeoutMs?: number;
}

/** A connection silent this long gets TCP keep-alive probes, so a database that vanished is noticed without a query. */
export const KEEP_ALIVE_DELAY_MS = 10_000;
/** How much longer the client waits than the server's statement deadline. */
export const CLIENT_GRACE_MS = 1000;

/** The `pg` options of the deadlines above (none when `statementTimeoutMs` is 0 or unset). */
export function deadlineOptions(statementTimeoutMs = 0): Record<string, number> {
  return statementTimeoutMs > 0
    ? { statement_timeout: statementTimeoutMs, query_timeout: statementTimeoutMs + CLIENT_GRACE_MS }
    : {};
}

/**
 * The one options object used by the service and by the TypeORM CLI (ormconfig.ts). The service passes no
 * entities: each feature module registers its own (`TypeOrmModule.forFeature`, loaded automatically).
 */
export function dataSourceOptions(
  url: string,
  tuning: DatabaseTuning = { poolSize: 10 },
  entities: DataSourceOptions['entities'] = [],
): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'each',
    synchronize: false,
    // warnings and migrations only, through the service's logger (a failed query's parameters may be a secret)
    logging: ['warn', 'migration'],
    logger: new TypeOrmServiceLogger(),
    extra: {
      max: tuning.poolSize,
      connectionTimeoutMillis: 5000,
      idleTimeoutMillis: 30000,
      application_name: 'svc-gateway',
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEP_ALIVE_DELAY_MS,
      ...deadlineOptions(tuning.statementTimeoutMs),
    },
  };
}
