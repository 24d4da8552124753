import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { AppModule } from '../app.module';
import { projectRoot } from '../common/paths';
import { buildOpenApiDocument } from '../openapi';

export const OPENAPI_PATH = join(projectRoot(), 'openapi', 'openapi.json');

/** The document as committed: stable key order, two-space indent, trailing newline. */
export async function renderOpenApi(): Promise<string> {
  // preview: the module graph is scanned but no provider runs, so no database is needed
  const app = await NestFactory.create(AppModule, { preview: true, logger: false, abortOnError: false });
  const document = buildOpenApiDocument(app);
  await app.close();
  return `${JSON.stringify(document, null, 2)}\n`;
}

// `--stdout` prints the document instead of writing it (the staleness test compares the two).
if (require.main === module) {
  renderOpenApi()
    .then((text) => {
      if (process.argv.includes('--stdout')) {
        process.stdout.write(text);
        return;
      }
      mkdirSync(dirname(OPENAPI_PATH), { recursive: true });
      writeFileSync(OPENAPI_PATH, text);
      process.stdout.write(`wrote ${OPENAPI_PATH}\n`);
    })
    .catch((err: Error) => {
      process.stderr.write(`${err.stack ?? err.message}\n`);
      process.exit(1);
    });
}
