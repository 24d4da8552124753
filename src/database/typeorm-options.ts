import type { DataSourceOptions } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { ENTITIES } from './entities';

export interface DatabaseTuning {
  /** Connections in the pool; the embedded database takes exactly one (PGlite is one session). */
  poolSize: number;
}

/** The one options object used by the service and by the TypeORM CLI (ormconfig.ts). */
export function dataSourceOptions(url: string, tuning: DatabaseTuning = { poolSize: 10 }): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'each',
    synchronize: false,
    // not 'error': TypeORM would print a failed query's parameters, which may be a secret being written
    logging: ['warn', 'migration'],
    extra: {
      max: tuning.poolSize,
      connectionTimeoutMillis: 5000,
      idleTimeoutMillis: 30000,
      application_name: 'svc-gateway',
    },
  };
}
