import { Logger as NestLogger } from '@nestjs/common';
import type { Logger } from 'typeorm';

/**
 * TypeORM's messages through the service's logger (JSON lines, at its level) instead of TypeORM's own console
 * writer: its warnings (a pooled connection the server closed) and migrations. Queries and their errors are not
 * logged: a failed statement's parameters may be a secret being written.
 */
export class TypeOrmServiceLogger implements Logger {
  private readonly logger = new NestLogger('TypeORM');

  logQuery(): void {}

  logQueryError(): void {}

  logQuerySlow(): void {}

  logSchemaBuild(): void {}

  logMigration(message: string): void {
    this.logger.log(message);
  }

  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    if (level === 'warn') this.logger.warn(String(message));
  }
}
