import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

/** What readiness asks of the database: does it answer, are the migrations applied. */
@Injectable()
export class DatabaseStatus {
  constructor(private readonly dataSource: DataSource) {}

  async ping(): Promise<void> {
    await this.dataSource.query('SELECT 1');
  }

  /** Whether some migration is not applied yet. */
  migrationsPending(): Promise<boolean> {
    return this.dataSource.showMigrations();
  }
}
