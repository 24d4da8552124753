import { Injectable } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';
import { toPage } from '../common/http/pagination.dto';
import { USAGE_ID, UsageListDto, UsageRecordDto } from './dto/usage.dto';
import { UsageRecordEntity } from './usage-record.entity';
import { UsageRecordsRepository } from './usage-records.repository';
import { UsageWriter } from './usage.writer';

@Injectable()
export class UsageService {
  constructor(
    private readonly records: UsageRecordsRepository,
    private readonly writer: UsageWriter,
  ) {}

  /**
   * A page of the key's own records (this replica's buffer is flushed first): newest first, or, for one
   * request (`requestId`), in the order they were made, with the records of the requests made under it
   * (`<id>_<n>`: a stream's texts, an async task's chunks). `after` is the `last_id` of the previous page.
   */
  async list(keyId: string, options: { requestId?: string; after?: string; limit: number }): Promise<UsageListDto> {
    const { requestId, after, limit } = options;
    const cursorInvalid = () =>
      new DomainError(
        'invalid_cursor',
        `'after' must be the id of one of your usage records${requestId ? ' of that request' : ''}; '${after}' is not.`,
        {
          param: 'after',
        },
      );
    if (after !== undefined && !USAGE_ID.test(after)) throw cursorInvalid();
    await this.writer.flush();
    const cursor = after?.slice('usage_'.length);
    const rows = await this.records.page(keyId, { requestId, cursor, limit: limit + 1 });
    if (!rows) throw cursorInvalid();
    return toPage(rows.map(toRecord), limit);
  }
}

function toRecord(r: UsageRecordEntity): UsageRecordDto {
  return {
    id: `usage_${r.id}`,
    object: 'usage.record',
    request_id: r.requestId,
    capability: r.capability,
    requested_model: r.requestedModel,
    provider: r.provider,
    model: r.model,
    fallback_level: r.fallbackLevel,
    status: r.status,
    latency_ms: r.latencyMs,
    attempts: r.attempts,
    prompt_tokens: r.promptTokens,
    completion_tokens: r.completionTokens,
    total_tokens: r.totalTokens,
    characters: r.characters,
    created_at: Math.floor(r.createdAt.getTime() / 1000),
  };
}
