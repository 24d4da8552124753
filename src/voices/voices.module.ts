import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ConsentsModule } from '../consents/consents.module';
import { CustomVoiceEntity } from './custom-voice.entity';
import { CustomVoiceDirectory } from './custom-voice-directory';
import { CustomVoicesController } from './custom-voices.controller';
import { CustomVoicesRepository } from './custom-voices.repository';
import { CustomVoicesService } from './custom-voices.service';

/** Custom voices (cloned behind a consent, or designed); the speech module routes synthesis with them. */
@Module({
  imports: [ConsentsModule, TypeOrmModule.forFeature([CustomVoiceEntity])],
  controllers: [CustomVoicesController],
  providers: [CustomVoicesRepository, CustomVoiceDirectory, CustomVoicesService],
  exports: [CustomVoicesService, CustomVoiceDirectory],
})
export class VoicesModule {}
