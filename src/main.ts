import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { APP_OPTIONS, setupApp } from './app.setup';
import { printBannerAfterLogs } from './banner';
import { EnvironmentVariables } from './config/env.schema';
import { startupFailure, StartupLogger } from './common/startup-error';
import { exitOnSignals } from './shutdown';
import { tracing } from './tracing/tracing';

async function bootstrap(): Promise<void> {
  // before Nest: the OTEL_* variables decide, and a value it cannot honour fails the boot (decisions §12)
  tracing.start();
  // until the JSON logger takes over, a failed start is kept to one line (printed below), not a stack trace
  const app = setupApp(
    await NestFactory.create<NestExpressApplication>(AppModule, {
      ...APP_OPTIONS,
      logger: new StartupLogger(),
      abortOnError: false,
    }),
  );
  exitOnSignals(app);
  const env = app.get(EnvironmentVariables);
  await app.listen(env.PORT, env.HOST);
  printBannerAfterLogs(app);
}

bootstrap().catch((err: unknown) => {
  process.stderr.write(startupFailure(err));
  process.exit(1);
});
