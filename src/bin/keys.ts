import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { parseArgs } from 'node:util';
import { DomainError } from '../common/errors/domain-error';
import { validationErrorToDomain } from '../common/http/validation';
import { AppConfigModule } from '../config/config.module';
import { DatabaseModule } from '../database/database.module';
import { CreateProxyKeyDto, UpdateProxyKeyDto } from '../keys/dto/proxy-key.dto';
import { KeyDirectory } from '../keys/key-directory';
import { KeysRepository } from '../keys/keys.repository';
import { KeysService } from '../keys/keys.service';
import { ProxyKeyEntity } from '../keys/proxy-key.entity';

/** The key services without HTTP: the same rules as the admin API. */
@Module({
  imports: [AppConfigModule, DatabaseModule, TypeOrmModule.forFeature([ProxyKeyEntity])],
  providers: [KeysRepository, KeyDirectory, KeysService],
})
class KeysCliModule {}

const USAGE = `Usage: npm run keys -- <command>
  create --name NAME --chain '[{"provider":"echo","model":"echo-1"}]'   prints the secret once
  list
  get ID
  update ID [--name NAME] [--chain JSON]
  delete ID
Uses DATABASE_URL, or the embedded database in SVC_DATA_DIR (stop the service first, or use the admin API).`;

function parseChain(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new DomainError('invalid_json', '--chain is not valid JSON.', { param: 'chain' });
  }
}

function validated<T extends object>(cls: new () => T, plain: object): T {
  const dto = plainToInstance(cls, plain);
  const errors = validateSync(dto, { whitelist: true, forbidNonWhitelisted: true });
  if (errors.length > 0) throw validationErrorToDomain(errors);
  return dto;
}

async function run(service: KeysService, argv: string[]): Promise<unknown> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { name: { type: 'string' }, chain: { type: 'string' } },
  });
  const [command, id] = positionals;
  const needId = (): string => {
    if (!id) throw new DomainError('missing_field', `${command} needs a key id.`, { param: 'id' });
    return id;
  };
  switch (command) {
    case 'create': {
      const dto = validated(CreateProxyKeyDto, { name: values.name, chain: parseChain(values.chain) });
      return service.create(dto.name, dto.chain);
    }
    case 'list':
      return service.list();
    case 'get':
      return service.get(needId());
    case 'update':
      return service.update(
        needId(),
        validated(UpdateProxyKeyDto, { name: values.name, chain: parseChain(values.chain) }),
      );
    case 'delete':
      return service.delete(needId());
    default:
      throw new Error(USAGE);
  }
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return argv.length === 0 ? 2 : 0;
  }
  process.env.LOG_LEVEL ??= 'warn';
  const app = await NestFactory.createApplicationContext(KeysCliModule, { logger: ['error', 'warn'] });
  try {
    const result = await run(app.get(KeysService), argv);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (err) {
    const message =
      err instanceof DomainError
        ? `${err.code}: ${err.message}${err.param ? ` (${err.param})` : ''}`
        : (err as Error).message;
    process.stderr.write(`${message}\n`);
    return 1;
  } finally {
    await app.close();
  }
}

main()
  .then((code) => process.exit(code))
  .catch((err: Error) => {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  });
