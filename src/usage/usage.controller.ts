import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../common/auth/auth.decorators';
import { ApiErrors } from '../common/http/api-errors.decorator';
import { DEFAULT_PAGE_SIZE } from '../common/http/pagination.dto';
import type { AuthenticatedKey } from '../keys/key-directory';
import { UsageListDto, UsageQueryDto } from './dto/usage.dto';
import { UsageService } from './usage.service';

@ApiTags('usage')
@ApiBearerAuth('proxy-key')
@ApiErrors(400, 401)
@Controller('v1/usage')
export class UsageController {
  constructor(private readonly usage: UsageService) {}

  /**
   * Your usage records, newest first, with cursor pagination (`limit`, `after`); with `request_id`, only
   * that request's records (its `x-svc-request-id`), in the order they were made.
   */
  @Get()
  list(@CurrentKey() key: AuthenticatedKey, @Query() query: UsageQueryDto): Promise<UsageListDto> {
    return this.usage.list(key.id, { requestId: query.request_id, after: query.after, limit: query.limit ?? DEFAULT_PAGE_SIZE });
  }
}
