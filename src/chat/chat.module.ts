import { Module } from '@nestjs/common';
import { KeysModule } from '../keys/keys.module';
import { QuotasModule } from '../quotas/quotas.module';
import { ChatFastPath } from './chat-fast-path';
import { ChatController } from './chat.controller';
import { ChatService } from './chat.service';

/**
 * Chat completions: the Nest route, and the fast path that serves its plain requests with the same steps
 * (FailoverService, MetricsService and the configuration come from global modules).
 */
@Module({
  imports: [KeysModule, QuotasModule],
  controllers: [ChatController],
  providers: [ChatService, ChatFastPath],
  exports: [ChatFastPath],
})
export class ChatModule {}
