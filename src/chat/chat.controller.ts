import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOkResponse, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { ApiErrors } from '../common/http/api-errors.decorator';
import type { FailoverScope } from '../failover/failover-scope';
import { Proxied, ProxyScope } from '../failover/failover.interceptor';
import { parseChatRequest } from './chat-request';
import { ChatService } from './chat.service';
import { ChatCompletionDto, ChatCompletionRequestDto } from './dto/chat.dto';

@ApiTags('chat')
@ApiBearerAuth('proxy-key')
@Controller('v1/chat/completions')
export class ChatController {
  constructor(private readonly chat: ChatService) {}

  /**
   * OpenAI-compatible chat completions through the key's failover chain. Every response carries
   * x-svc-provider-used, x-svc-is-fallback, x-svc-fallback-level, x-svc-request-id, and
   * x-svc-fallback-alert when a failover happened.
   */
  @Post()
  @HttpCode(200)
  @Proxied('chat')
  @ApiBody({ type: ChatCompletionRequestDto })
  @ApiProduces('application/json', 'text/event-stream')
  @ApiOkResponse({
    type: ChatCompletionDto,
    description: 'A chat.completion, or an SSE stream of chat.completion.chunk when `stream` is true.',
  })
  @ApiErrors(400, 401, 413, 502, 503)
  async create(@ProxyScope() scope: FailoverScope, @Body() body: unknown, @Res() res: Response): Promise<void> {
    await this.chat.respond(scope, parseChatRequest(body), res);
  }
}
