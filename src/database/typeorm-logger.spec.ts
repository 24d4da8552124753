import { Logger } from '@nestjs/common';
import { TypeOrmServiceLogger } from './typeorm-logger';

describe('TypeOrmServiceLogger', () => {
  afterEach(() => jest.restoreAllMocks());

  it("passes TypeORM's warnings and migrations to the service's logger, and never a query or its parameters", () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    const console = jest.spyOn(global.console, 'warn');
    const logger = new TypeOrmServiceLogger();

    logger.log('warn', 'Postgres pool raised an error. Error: Connection terminated unexpectedly');
    logger.logMigration('Migration WebhookLanes has been executed');
    logger.logQueryError();
    logger.logQuery();
    logger.log('info', 'query: SELECT 1');

    expect(warn.mock.calls).toEqual([['Postgres pool raised an error. Error: Connection terminated unexpectedly']]);
    expect(log.mock.calls).toEqual([['Migration WebhookLanes has been executed']]);
    expect(console).not.toHaveBeenCalled();
  });
});
