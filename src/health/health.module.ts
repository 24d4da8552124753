import { Module } from '@nestjs/common';
import { ProviderHealthController } from './provider-health.controller';

@Module({ controllers: [ProviderHealthController] })
export class HealthModule {}
