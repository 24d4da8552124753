import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { RateLimitCounterEntity } from './rate-limit-counter.entity';
import { RateLimitRepository } from './rate-limit.repository';
import { RateLimiter } from './rate-limiter.service';
import { StepQuotaCounterEntity } from './step-quota-counter.entity';
import { StepQuotasRepository } from './step-quotas.repository';
import { StepQuotas } from './step-quotas.service';

/**
 * Counting requests against limits: the per-key rate limit (the HTTP guard, the fast path, the WebSocket
 * upgrade) and the quota of each chain step (the failover core skips a step whose quota is used up).
 */
@Module({
  imports: [TypeOrmModule.forFeature([RateLimitCounterEntity, StepQuotaCounterEntity])],
  providers: [RateLimitRepository, RateLimiter, StepQuotasRepository, StepQuotas],
  exports: [RateLimiter, StepQuotas],
})
export class QuotasModule {}
