import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../common/auth/auth.decorators';
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

  /** Usage records of one of your requests, by its `x-svc-request-id`. */
  @Get()
  byRequest(@CurrentKey() key: AuthenticatedKey, @Query() query: UsageQueryDto): Promise<UsageListDto> {
    return this.usage.byRequest(key.id, query.request_id);
  }
}
