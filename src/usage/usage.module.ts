import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { RecordsRetention } from './records-retention';
import { UsageRecordEntity } from './usage-record.entity';
import { UsageController } from './usage.controller';
import { UsageService } from './usage.service';
import { UsageRecordsRepository } from './usage-records.repository';
import { UsageWriter } from './usage.writer';

@Module({
  imports: [TypeOrmModule.forFeature([UsageRecordEntity])],
  controllers: [UsageController],
  providers: [UsageRecordsRepository, UsageWriter, UsageService, RecordsRetention],
  exports: [UsageWriter],
})
export class UsageModule {}
