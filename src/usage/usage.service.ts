import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { UsageListDto } from './dto/usage.dto';
import { UsageRecordEntity } from './usage-record.entity';
import { UsageWriter } from './usage.writer';

@Injectable()
export class UsageService {
  constructor(
    @InjectRepository(UsageRecordEntity) private readonly records: Repository<UsageRecordEntity>,
    private readonly writer: UsageWriter,
  ) {}

  /**
   * The key's own records of one request (this replica's buffer is flushed first), and of the requests made
   * under it: `<id>_<n>` (a stream's texts, an async task's chunks). Ids are base62 joined by `_`, so the
   * prefix only needs `_` escaped for LIKE.
   */
  async byRequest(keyId: string, requestId: string): Promise<UsageListDto> {
    await this.writer.flush();
    const prefix = `${requestId.replace(/_/g, '\\_')}\\_%`;
    const rows = await this.records
      .createQueryBuilder('r')
      .where('r.keyId = :keyId', { keyId })
      .andWhere('(r.requestId = :requestId OR r.requestId LIKE :prefix)', { requestId, prefix })
      .orderBy('r.id', 'ASC')
      .getMany();
    return {
      object: 'list',
      data: rows.map((r) => ({
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
      })),
    };
  }
}
