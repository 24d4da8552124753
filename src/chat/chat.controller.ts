import { Body, Controller, HttpCode, Post, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOkResponse, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { Proxied, ProxyCall } from '../failover/failover.interceptor';
import type { ProxiedCall } from '../failover/proxied-call';
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
  // Plain requests (exactly this path, a JSON body) never reach this handler: ChatFastPath serves them with the
  // same steps. It serves the rest: a query string, another content type, an empty body. (A line comment, so the
  // API document does not show it.)
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
  async create(@ProxyCall() call: ProxiedCall, @Body() body: unknown, @Res() res: Response): Promise<void> {
    await this.chat.respond(call, parseChatRequest(body), res);
  }
}
