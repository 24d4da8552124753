import 'reflect-metadata';
import type { INestApplicationContext, LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { parseArgs } from 'node:util';
import { DomainError } from '../common/errors/domain-error';
import { validationErrorToDomain } from '../common/http/validation';
import type { ChainStepDto } from '../config/chain-step.dto';
import { CreateProxyKeyDto, UpdateProxyKeyDto } from '../keys/dto/proxy-key.dto';
import type { CreatedProxyKeyDto, DeletedProxyKeyDto, ProxyKeyDto } from '../keys/dto/proxy-key.dto';
import { KeysService } from '../keys/keys.service';
import { KeysCliModule } from './keys-cli.module';
import { waitForDatabase } from '../database/wait-for-database';

const USAGE = `Usage: npm run keys -- <command> [--json]
  create --name NAME --chain '[{"provider":"echo","model":"echo-1"}]'   prints the secret once
  list
  show ID
  update ID [--name NAME] [--chain JSON]
  delete ID
Uses DATABASE_URL, or the embedded database in SVC_DATA_DIR (stop the service first, or use the admin API).
--json prints the admin API's JSON instead of text.`;

/** A mistake in the command line: the usage is printed with it, exit code 2. */
class UsageError extends Error {}

type Answer =
  | { kind: 'created'; key: CreatedProxyKeyDto }
  | { kind: 'list'; keys: ProxyKeyDto[] }
  | { kind: 'key'; key: ProxyKeyDto; verb?: string }
  | { kind: 'deleted'; deleted: DeletedProxyKeyDto };

interface Command {
  command: string;
  id?: string;
  name?: string;
  chain?: string;
  json: boolean;
}

function parseCommand(argv: string[]): Command {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { name: { type: 'string' }, chain: { type: 'string' }, json: { type: 'boolean' } },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const [command, id, ...extra] = parsed.positionals;
  if (!['create', 'list', 'show', 'get', 'update', 'delete'].includes(command))
    throw new UsageError(`Unknown command '${command}'.`);
  if (extra.length > 0) throw new UsageError(`Unexpected argument '${extra[0]}'.`);
  if (['show', 'get', 'update', 'delete'].includes(command) && !id)
    throw new UsageError(`${command} needs a key id (pk_…, as list shows).`);
  return { command, id, name: parsed.values.name, chain: parsed.values.chain, json: parsed.values.json === true };
}

function parseChain(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new DomainError('invalid_json', `--chain is not valid JSON: ${text}`, { param: 'chain' });
  }
}

function validated<T extends object>(cls: new () => T, plain: object): T {
  const dto = plainToInstance(cls, plain);
  const errors = validateSync(dto, { whitelist: true, forbidNonWhitelisted: true });
  if (errors.length > 0) throw validationErrorToDomain(errors);
  return dto;
}

/** Checks what needs no database, so a typo is answered before the database is opened. */
function checkedInput(cmd: Command): CreateProxyKeyDto | UpdateProxyKeyDto | undefined {
  const plain = { name: cmd.name, chain: parseChain(cmd.chain) };
  if (cmd.command === 'create') return validated(CreateProxyKeyDto, plain);
  if (cmd.command === 'update') return validated(UpdateProxyKeyDto, plain);
  return undefined;
}

async function run(service: KeysService, cmd: Command, input: object | undefined): Promise<Answer> {
  const id = cmd.id ?? '';
  switch (cmd.command) {
    case 'create': {
      const dto = input as CreateProxyKeyDto;
      return { kind: 'created', key: await service.create(dto.name, dto.chain) };
    }
    case 'list':
      return { kind: 'list', keys: await service.list() };
    case 'update':
      return { kind: 'key', key: await service.update(id, input as UpdateProxyKeyDto), verb: 'Updated' };
    case 'delete':
      return { kind: 'deleted', deleted: await service.delete(id) };
    default:
      return { kind: 'key', key: await service.get(id) };
  }
}

const chainText = (chain: ChainStepDto[]): string => chain.map((step) => `${step.provider}/${step.model}`).join(' > ');
const when = (seconds: number): string => new Date(seconds * 1000).toISOString();

function keyLines(key: ProxyKeyDto): string[] {
  return [
    `  id:      ${key.id}`,
    `  name:    ${key.name}`,
    `  chain:   ${chainText(key.chain)}`,
    `  secret:  …${key.secret_hint}`,
    `  created: ${when(key.created_at)}`,
    `  updated: ${when(key.updated_at)}`,
  ];
}

function table(rows: string[][]): string[] {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  return rows.map((row) => row.map((cell, i) => (i < row.length - 1 ? cell.padEnd(widths[i]) : cell)).join('  '));
}

/** What a person reads: the secret once, ids next to names. */
function text(answer: Answer): string {
  switch (answer.kind) {
    case 'created':
      return [
        `Created key ${answer.key.id} (${answer.key.name}), chain ${chainText(answer.key.chain)}.`,
        `Secret (shown once, keep it): ${answer.key.secret}`,
      ].join('\n');
    case 'list':
      if (answer.keys.length === 0)
        return 'No keys yet. Make one with: npm run keys -- create --name NAME --chain JSON';
      return table([
        ['ID', 'NAME', 'SECRET', 'CHAIN'],
        ...answer.keys.map((key) => [key.id, key.name, `…${key.secret_hint}`, chainText(key.chain)]),
      ]).join('\n');
    case 'key':
      return [...(answer.verb ? [`${answer.verb} key ${answer.key.id}.`] : []), ...keyLines(answer.key)].join('\n');
    case 'deleted':
      return `Deleted key ${answer.deleted.id} (and its consents and custom voices).`;
  }
}

/** The admin API's body for the same operation. */
function body(answer: Answer): unknown {
  switch (answer.kind) {
    case 'created':
    case 'key':
      return answer.key;
    case 'list':
      return answer.keys;
    case 'deleted':
      return answer.deleted;
  }
}

/** A command waits a little for a database server that does not answer, not as long as the service does. */
const DATABASE_WAIT_MS = 12000;

/** The service's own wait for DATABASE_URL, bounded: past the bound, the last reason in one line. */
async function databaseAnswers(url: string | undefined): Promise<void> {
  if (!url) return; // embedded: opened by the module, in this process
  let waited = 0;
  let last = '';
  await waitForDatabase(url, {
    log: (line) => (last = line.replace(/; retrying .*$/, '')),
    sleep: async (ms) => {
      if (waited + ms > DATABASE_WAIT_MS) throw new Error(`${last}; gave up after ${waited / 1000} s`);
      waited += ms;
      await new Promise((resolve) => setTimeout(resolve, ms));
    },
  });
}

/** Warnings and errors as one line each, without stack traces; the boot's own failure is printed by main. */
const cliLogger: LoggerService = {
  log: () => undefined,
  warn: (message: unknown) => process.stderr.write(`warning: ${String(message)}\n`),
  error: (message: unknown, ...rest: unknown[]) => {
    if (rest[rest.length - 1] === 'ExceptionHandler') return;
    process.stderr.write(`error: ${message instanceof Error ? message.message : String(message)}\n`);
  },
};

function failure(err: unknown): string {
  if (err instanceof DomainError) return `${err.code}: ${err.message}${err.param ? ` (${err.param})` : ''}`;
  return err instanceof Error ? err.message : String(err);
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return argv.length === 0 ? 2 : 0;
  }
  let app: INestApplicationContext | undefined;
  try {
    const cmd = parseCommand(argv);
    const input = checkedInput(cmd);
    process.env.LOG_LEVEL ??= 'warn';
    await databaseAnswers(process.env.DATABASE_URL);
    app = await NestFactory.createApplicationContext(KeysCliModule, { logger: cliLogger, abortOnError: false });
    const answer = await run(app.get(KeysService), cmd, input);
    process.stdout.write(`${cmd.json ? JSON.stringify(body(answer), null, 2) : text(answer)}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`error: ${failure(err)}\n`);
    if (err instanceof UsageError) {
      process.stderr.write(`${USAGE}\n`);
      return 2;
    }
    return 1;
  } finally {
    await app?.close();
  }
}

// loading the configuration validates the environment in a promise nobody awaits yet: a bad value lands here
process.on('unhandledRejection', (err) => {
  process.stderr.write(`error: ${failure(err)}\n`);
  process.exit(1);
});

main()
  .then((code) => process.exit(code))
  .catch((err: unknown) => {
    process.stderr.write(`error: ${failure(err)}\n`);
    process.exit(1);
  });
