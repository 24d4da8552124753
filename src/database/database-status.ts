import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

/** What readiness asks of the database: does it answer, are the migrations applied. */
@Injectable()
export class DatabaseStatus {
  constructor(private readonly dataSource: DataSource) {}

  async ping(): Promise<void> {
    await this.dataSource.query('SELECT 1');
  }

  /** The size of the current database on disk (tables, indexes, TOAST), for the free-space guard. */
  async databaseBytes(): Promise<number> {
    const [row] = await this.dataSource.query<Array<{ bytes: string }>>(
      'SELECT pg_database_size(current_database())::text AS bytes',
    );
    return Number(row.bytes);
  }

  /** Whether some migration is not applied yet. */
  migrationsPending(): Promise<boolean> {
    return this.dataSource.showMigrations();
  }
}
