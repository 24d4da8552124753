import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { UsageRecordEntity } from './usage-record.entity';
import { UsageController } from './usage.controller';
import { UsageService } from './usage.service';
import { UsageRecordsRepository } from './usage-records.repository';
import { UsageRetention } from './usage-retention';
import { UsageWriter } from './usage.writer';

@Module({
  imports: [TypeOrmModule.forFeature([UsageRecordEntity])],
  controllers: [UsageController],
  providers: [UsageRecordsRepository, UsageWriter, UsageService, UsageRetention],
  exports: [UsageWriter],
})
export class UsageModule {}
