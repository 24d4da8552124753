import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ConsentsModule } from '../consents/consents.module';
import { CustomVoiceEntity } from './custom-voice.entity';
import { CustomVoiceDirectory } from './custom-voice-directory';
import { CustomVoicesController } from './custom-voices.controller';
import { CustomVoicesRepository } from './custom-voices.repository';
import { CustomVoicesService } from './custom-voices.service';
import { VoiceRemovalEntity } from './voice-removal.entity';
import { VoiceRemovals } from './voice-removals';
import { VoiceRemovalsRepository } from './voice-removals.repository';
import { VoiceUpstream } from './voice-upstream';
import { VoicesService } from './voices.service';

/**
 * Voices: which voice each chain step speaks with (built-in, mapped or custom), the voices a key can use,
 * and custom voices (cloned behind a consent, or designed).
 */
@Module({
  imports: [ConsentsModule, TypeOrmModule.forFeature([CustomVoiceEntity, VoiceRemovalEntity])],
  controllers: [CustomVoicesController],
  providers: [
    CustomVoicesRepository,
    CustomVoiceDirectory,
    VoiceUpstream,
    VoiceRemovalsRepository,
    VoiceRemovals,
    CustomVoicesService,
    VoicesService,
  ],
  exports: [CustomVoicesService, CustomVoiceDirectory, VoicesService],
})
export class VoicesModule {}
