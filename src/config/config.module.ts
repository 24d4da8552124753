import { Global, Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { EnvironmentVariables, validateEnvironment } from './env.schema';
import { GatewayConfig, loadGatewayConfig } from './gateway-config';

/**
 * Environment and gateway YAML, validated once at boot. `@nestjs/config` loads an optional
 * `.env` file into the environment; the typed `EnvironmentVariables` is read when the app is
 * created (so tests can set variables per app), and a bad value stops the boot with its name.
 */
@Global()
@Module({
  imports: [ConfigModule.forRoot({ ignoreEnvFile: false, validate: (raw) => (validateEnvironment(raw), raw) })],
  providers: [
    { provide: EnvironmentVariables, useFactory: () => validateEnvironment(process.env) },
    {
      provide: GatewayConfig,
      inject: [EnvironmentVariables],
      useFactory: (env: EnvironmentVariables) => loadGatewayConfig(env.SVC_CONFIG),
    },
  ],
  exports: [EnvironmentVariables, GatewayConfig],
})
export class AppConfigModule {}
