import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { KeysModule } from '../keys/keys.module';
import { QuotasModule } from '../quotas/quotas.module';
import { SpeechController } from './speech.controller';
import { SpeechService } from './speech.service';
import { SpeechStreamGateway } from './stream/speech-stream.gateway';
import { StreamTicketEntity } from './stream/tickets/stream-ticket.entity';
import { StreamTicketsController } from './stream/tickets/stream-tickets.controller';
import { StreamTicketsRepository } from './stream/tickets/stream-tickets.repository';
import { StreamTicketsService } from './stream/tickets/stream-tickets.service';
import { SpeechTaskChunkEntity, SpeechTaskEntity, SpeechTaskResultEntity } from './tasks/speech-task.entity';
import { SpeechTaskScheduler } from './tasks/speech-task.scheduler';
import { SpeechTaskSweepsRepository } from './tasks/speech-task-sweeps.repository';
import { SpeechTaskWorker } from './tasks/speech-task.worker';
import { SpeechTasksController } from './tasks/speech-tasks.controller';
import { SpeechTasksRepository } from './tasks/speech-tasks.repository';
import { SpeechTasksService } from './tasks/speech-tasks.service';
import { TaskAssembler } from './tasks/task-assembler';
import { TaskRunner } from './tasks/task-runner';
import { ChunkSpeaker } from './tasks/chunk-speaker';
import { TaskPinsRepository } from './tasks/task-pins.repository';
import { VoicesModule } from '../voices/voices.module';

@Module({
  imports: [
    KeysModule,
    QuotasModule,
    VoicesModule,
    TypeOrmModule.forFeature([SpeechTaskEntity, SpeechTaskChunkEntity, SpeechTaskResultEntity, StreamTicketEntity]),
  ],
  controllers: [SpeechController, SpeechTasksController, StreamTicketsController],
  providers: [
    SpeechService,
    SpeechStreamGateway,
    StreamTicketsRepository,
    StreamTicketsService,
    SpeechTasksRepository,
    SpeechTasksService,
    TaskAssembler,
    TaskRunner,
    ChunkSpeaker,
    TaskPinsRepository,
    SpeechTaskWorker,
    SpeechTaskScheduler,
    SpeechTaskSweepsRepository,
  ],
  exports: [SpeechService, SpeechTasksService],
})
export class SpeechModule {}
