import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/auth.decorators';
import { DomainError } from '../common/errors/domain-error';
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
   * Your usage records, newest first, with cursor pagination (`limit`, `after`). With `request_id`, only
   * that request's records in the order they were made: an HTTP request's `x-svc-request-id`, a speech
   * stream's `trace_id` (or one `task_continue`'s `request_id`); with `task_id`, an async speech task's.
   */
  @Get()
  list(@CurrentKey() key: AuthenticatedKey, @Query() query: UsageQueryDto): Promise<UsageListDto> {
    if (query.request_id && query.task_id)
      throw new DomainError('invalid_value', 'Give request_id or task_id, not both.', { param: 'task_id' });
    const requestId = query.task_id ? `req_${query.task_id}` : query.request_id;
    return this.usage.list(key.id, { requestId, after: query.after, limit: query.limit ?? DEFAULT_PAGE_SIZE });
  }
}
