import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { registerErrorDialect } from '../common/errors/error-dialects';
import { QuotasModule } from '../quotas/quotas.module';
import { SpeechModule } from '../speech/speech.module';
import { VoicesModule } from '../voices/voices.module';
import { MINIMAX_ERROR_DIALECT } from './minimax-errors';
import { MiniMaxFileEntity } from './minimax-file.entity';
import { MiniMaxFilesRepository } from './minimax-files.repository';
import { MiniMaxFilesRetention } from './minimax-files.retention';
import { MiniMaxFilesService } from './minimax-files.service';
import { MiniMaxAudioLinksController, MiniMaxSpeechController } from './minimax-speech.controller';
import { MiniMaxSpeechService } from './minimax-speech.service';
import { MiniMaxVoicesController } from './minimax-voices.controller';
import { MiniMaxVoicesService } from './minimax-voices.service';

/**
 * MiniMax's own API on the gateway (decisions §10), so MiniMax's clients gain failover by changing their
 * host: each route translates MiniMax's request to the gateway's services and their answer or error back.
 *
 * Shapes follow MiniMax's public API reference (platform.minimax.io/docs/api-reference: speech-t2a-http,
 * speech-t2a-async-create, speech-t2a-async-query, file-management (upload, retrieve), voice-cloning,
 * voice-design, get-voice, errorcode) and what the official `minimax-mcp-js` client reads.
 */
@Module({
  imports: [QuotasModule, SpeechModule, VoicesModule, TypeOrmModule.forFeature([MiniMaxFileEntity])],
  controllers: [MiniMaxSpeechController, MiniMaxVoicesController, MiniMaxAudioLinksController],
  providers: [
    MiniMaxFilesRepository,
    MiniMaxFilesRetention,
    MiniMaxFilesService,
    MiniMaxSpeechService,
    MiniMaxVoicesService,
  ],
})
export class MiniMaxCompatModule {}

// every error of these routes (the body parser's and the guard's included) in MiniMax's shape; registered with
// the module's code, not its instance, so a graph only scanned (the OpenAPI writer's preview) knows it too
registerErrorDialect(MINIMAX_ERROR_DIALECT);
