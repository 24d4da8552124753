import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { QuotasModule } from '../quotas/quotas.module';
import { ConsentsController } from './consents.controller';
import { ConsentsRepository } from './consents.repository';
import { ConsentsService } from './consents.service';
import { ConsentRecordingEntity, VoiceConsentEntity } from './voice-consent.entity';

@Module({
  imports: [QuotasModule, TypeOrmModule.forFeature([VoiceConsentEntity, ConsentRecordingEntity])],
  controllers: [ConsentsController],
  providers: [ConsentsRepository, ConsentsService],
  exports: [ConsentsService],
})
export class ConsentsModule {}
