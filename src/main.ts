import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { APP_OPTIONS, setupApp } from './app.setup';
import { printBanner } from './banner';
import { EnvironmentVariables } from './config/env.schema';

const SHUTDOWN_BOUND_MS = 25000;

/** SIGTERM/SIGINT: close everything (HTTP, jobs, database) within a bound, then exit 0; a second signal exits at once. */
function exitOnSignals(app: INestApplication): void {
  let closing = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (closing) process.exit(1);
    closing = true;
    process.stderr.write(`${signal} received: shutting down\n`);
    const force = setTimeout(() => process.exit(1), SHUTDOWN_BOUND_MS);
    force.unref();
    app.close().then(
      () => process.exit(0),
      (err: Error) => {
        process.stderr.write(`shutdown failed: ${err.message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

async function bootstrap(): Promise<void> {
  const app = setupApp(await NestFactory.create<NestExpressApplication>(AppModule, APP_OPTIONS));
  exitOnSignals(app);
  const env = app.get(EnvironmentVariables);
  await app.listen(env.PORT, env.HOST);
  printBanner(app);
}

bootstrap().catch((err: Error) => {
  process.stderr.write(`Failed to start: ${err.message}\n`);
  process.exit(1);
});
