import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, DataSourceOptions } from 'typeorm';
import { EnvironmentVariables } from '../config/env.schema';
import { MetricsModule } from '../metrics/metrics.module';
import { DatabaseEndpoint } from './database-endpoint';
import { DatabaseStatus } from './database-status';
import { JobQueue } from './job-queue';
import { JobQueueMetrics } from './job-queue-metrics';
import { runMigrationsExclusively } from './migrate';
import { PgChangeFeed } from './pg-change-feed';
import { StorageSpace } from './storage-space';
import { dataSourceOptions } from './typeorm-options';

@Global()
@Module({
  providers: [
    {
      provide: DatabaseEndpoint,
      inject: [EnvironmentVariables],
      useFactory: (env: EnvironmentVariables) => DatabaseEndpoint.open(env),
    },
  ],
  exports: [DatabaseEndpoint],
})
class DatabaseEndpointModule {}

/** The same database with one connection and no statement deadline (migrations). */
function withoutDeadlines(options: DataSourceOptions): DataSourceOptions {
  const extra: Record<string, unknown> = { ...(options.extra as Record<string, unknown>), max: 1 };
  delete extra.statement_timeout;
  delete extra.query_timeout;
  return { ...options, extra };
}

/**
 * TypeORM over the configured or embedded PostgreSQL; migrations run at start, never `synchronize`. The
 * connection alone, what a command-line tool needs (src/bin/keys.ts): no job queue started, no metrics.
 */
@Global()
@Module({
  imports: [
    DatabaseEndpointModule,
    TypeOrmModule.forRootAsync({
      inject: [DatabaseEndpoint, EnvironmentVariables],
      useFactory: (endpoint: DatabaseEndpoint, env: EnvironmentVariables) => ({
        ...dataSourceOptions(
          endpoint.url,
          endpoint.isEmbedded
            ? { poolSize: 1 }
            : { poolSize: env.DB_POOL_SIZE, statementTimeoutMs: env.DB_STATEMENT_TIMEOUT_MS },
        ),
        // every feature module's TypeOrmModule.forFeature entities: the database folder names none of them
        autoLoadEntities: true,
        // run below, under a lock: replicas starting together must not race through the same migration
        migrationsRun: false,
        retryAttempts: 10,
        retryDelay: 1000,
      }),
      dataSourceFactory: async (options) => {
        if (!options) throw new Error('no database options');
        // migrations first, on a connection of their own without the statement deadline: a migration must finish
        const migrator = await new DataSource(withoutDeadlines(options)).initialize();
        try {
          await runMigrationsExclusively(migrator);
        } finally {
          await migrator.destroy().catch(() => undefined);
        }
        return new DataSource(options).initialize();
      },
    }),
  ],
  providers: [PgChangeFeed, DatabaseStatus],
  exports: [DatabaseEndpointModule, PgChangeFeed, DatabaseStatus],
})
export class DatabaseConnectionModule {}

/**
 * The connection, the durable job queue and the free-space guard of a running service; the queue's metrics need
 * MetricsModule, imported here.
 */
@Global()
@Module({
  imports: [DatabaseConnectionModule, MetricsModule],
  providers: [JobQueue, JobQueueMetrics, StorageSpace],
  exports: [DatabaseConnectionModule, JobQueue, StorageSpace],
})
export class DatabaseModule {}
