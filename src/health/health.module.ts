import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ProbesController } from './probes.controller';
import { ProviderHealthController } from './provider-health.controller';
import { Readiness } from './readiness.service';
import { ShutdownState } from './shutdown-state';

/** Provider health of a key's chain (/v1), and the process's liveness and readiness probes. */
@Module({
  // readiness logs its own transitions; terminus would log every failed probe
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [ProviderHealthController, ProbesController],
  providers: [Readiness, ShutdownState],
  exports: [ShutdownState],
})
export class HealthModule {}
