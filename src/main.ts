import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { APP_OPTIONS, setupApp } from './app.setup';
import { printBanner } from './banner';
import { EnvironmentVariables } from './config/env.schema';
import { exitOnSignals } from './shutdown';

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
