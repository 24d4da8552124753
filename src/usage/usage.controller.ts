import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../common/auth/auth.decorators';
import { DomainError } from '../common/errors/domain-error';
import { ApiErrors } from '../common/http/api-errors.decorator';
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
   * Usage records of one of your requests, by its `x-svc-request-id` (`request_id`), of a speech stream (its
   * `trace_id`, or one `task_continue`'s `request_id`), or of an async speech task (`task_id`, or one chunk's id).
   */
  @Get()
  byRequest(@CurrentKey() key: AuthenticatedKey, @Query() query: UsageQueryDto): Promise<UsageListDto> {
    if (query.request_id && query.task_id) throw new DomainError('invalid_value', 'Give request_id or task_id, not both.', { param: 'task_id' });
    if (query.task_id) return this.usage.byRequest(key.id, `req_${query.task_id}`);
    if (!query.request_id) throw new DomainError('missing_field', 'Give request_id (a req_… id) or task_id (a task_… id).', { param: 'request_id' });
    return this.usage.byRequest(key.id, query.request_id);
  }
}
