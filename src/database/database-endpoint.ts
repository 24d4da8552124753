import { Logger, OnApplicationShutdown } from '@nestjs/common';
import pino from 'pino';
import { EnvironmentVariables } from '../config/env.schema';
import { EmbeddedPostgres } from './embedded-postgres';
import { waitForDatabase } from './wait-for-database';

/** Where the database is: the configured server, or an embedded one this process started. */
export class DatabaseEndpoint implements OnApplicationShutdown {
  constructor(
    readonly url: string,
    private readonly embedded: EmbeddedPostgres | null,
  ) {}

  get isEmbedded(): boolean {
    return this.embedded !== null;
  }

  static async open(env: EnvironmentVariables): Promise<DatabaseEndpoint> {
    if (env.DATABASE_URL) {
      // written at once: Nest's logs are buffered until the app exists, and this can wait for long
      const log = pino({ level: env.LOG_LEVEL }).child({ context: 'Database' });
      await waitForDatabase(env.DATABASE_URL, { log: (line) => log.warn(line) });
      return new DatabaseEndpoint(env.DATABASE_URL, null);
    }
    const embedded = await EmbeddedPostgres.start(env.SVC_DATA_DIR);
    new Logger('Database').log(`embedded PostgreSQL (PGlite) in ${env.SVC_DATA_DIR}`);
    return new DatabaseEndpoint(embedded.url, embedded);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.embedded?.stop();
  }
}
