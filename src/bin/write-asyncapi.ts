import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { AppModule } from '../app.module';
import { buildAsyncApiDocument } from '../asyncapi';
import { ASYNCAPI_PATH } from '../console';
import { buildOpenApiDocument } from '../openapi';

/** The AsyncAPI document as committed: stable key order, two-space indent, trailing newline. */
export async function renderAsyncApi(): Promise<string> {
  // preview: the module graph is scanned but no provider runs, so no database is needed
  const app = await NestFactory.create(AppModule, { preview: true, logger: false, abortOnError: false });
  const document = buildAsyncApiDocument(buildOpenApiDocument(app));
  await app.close();
  return `${JSON.stringify(document, null, 2)}\n`;
}

// `--stdout` prints the document instead of writing it (the staleness test compares the two).
if (require.main === module) {
  renderAsyncApi()
    .then((text) => {
      if (process.argv.includes('--stdout')) {
        process.stdout.write(text);
        return;
      }
      mkdirSync(dirname(ASYNCAPI_PATH), { recursive: true });
      writeFileSync(ASYNCAPI_PATH, text);
      process.stdout.write(`wrote ${ASYNCAPI_PATH}\n`);
    })
    .catch((err: Error) => {
      process.stderr.write(`${err.stack ?? err.message}\n`);
      process.exit(1);
    });
}
