import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EnvironmentVariables } from '../config/env.schema';
import { DatabaseEndpoint } from './database-endpoint';
import { JobQueue } from './job-queue';
import { runMigrationsExclusively } from './migrate';
import { PgChangeFeed } from './pg-change-feed';
import { dataSourceOptions } from './typeorm-options';

@Global()
@Module({
  providers: [{ provide: DatabaseEndpoint, inject: [EnvironmentVariables], useFactory: (env: EnvironmentVariables) => DatabaseEndpoint.open(env) }],
  exports: [DatabaseEndpoint],
})
class DatabaseEndpointModule {}

@Global()
/** TypeORM over the configured or embedded PostgreSQL; migrations run at start, never `synchronize`. */
@Module({
  imports: [
    DatabaseEndpointModule,
    TypeOrmModule.forRootAsync({
      inject: [DatabaseEndpoint, EnvironmentVariables],
      useFactory: (endpoint: DatabaseEndpoint, env: EnvironmentVariables) => ({
        ...dataSourceOptions(endpoint.url, { poolSize: endpoint.isEmbedded ? 1 : env.DB_POOL_SIZE }),
        // run below, under a lock: replicas starting together must not race through the same migration
        migrationsRun: false,
        retryAttempts: 10,
        retryDelay: 1000,
      }),
      dataSourceFactory: async (options) => {
        if (!options) throw new Error('no database options');
        const dataSource = await new DataSource(options).initialize();
        try {
          await runMigrationsExclusively(dataSource);
        } catch (err) {
          await dataSource.destroy().catch(() => undefined);
          throw err;
        }
        return dataSource;
      },
    }),
  ],
  providers: [PgChangeFeed, JobQueue],
  exports: [DatabaseEndpointModule, PgChangeFeed, JobQueue],
})
export class DatabaseModule {}
