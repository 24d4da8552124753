import { Controller, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../../../auth/auth.decorators';
import { ApiErrors } from '../../../common/http/api-errors.decorator';
import type { AuthenticatedKey } from '../../../keys/key-directory';
import { StreamTicketDto } from './stream-ticket.dto';
import { StreamTicketsService } from './stream-tickets.service';

@ApiTags('speech')
@ApiBearerAuth('proxy-key')
@ApiErrors(401, 429)
@Controller('v1/audio/speech/stream/tickets')
export class StreamTicketsController {
  constructor(private readonly tickets: StreamTicketsService) {}

  /**
   * A single-use ticket for the speech WebSocket, for clients that cannot send an `Authorization` header
   * on the upgrade (browsers): open `ws(s)://…/v1/audio/speech/stream?ticket=<ticket>` within 60 s. The
   * ticket works once, on any replica; the stream then runs under the key that asked for it.
   */
  @Post()
  @ApiCreatedResponse({ type: StreamTicketDto })
  issue(@CurrentKey() key: AuthenticatedKey): Promise<StreamTicketDto> {
    return this.tickets.issue(key);
  }
}
