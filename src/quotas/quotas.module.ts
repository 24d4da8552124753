import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { RateLimitCounterEntity } from './rate-limit-counter.entity';
import { RateLimitRepository } from './rate-limit.repository';
import { RateLimiter } from './rate-limiter.service';
import { StepQuotaCounterEntity } from './step-quota-counter.entity';
import { StepQuotasRepository } from './step-quotas.repository';
import { StepQuotas } from './step-quotas.service';
import { StorageQuotas } from './storage-quotas';

/**
 * Counting requests against limits: the per-key rate limit (the HTTP guard, the fast path, the WebSocket
 * upgrade), the quota of each chain step (the failover core skips a step whose quota is used up), and what
 * one key may store (StorageQuotas: the repositories that store count against them).
 */
@Module({
  imports: [TypeOrmModule.forFeature([RateLimitCounterEntity, StepQuotaCounterEntity])],
  providers: [RateLimitRepository, RateLimiter, StepQuotasRepository, StepQuotas, StorageQuotas],
  exports: [RateLimiter, StepQuotas, StorageQuotas],
})
export class QuotasModule {}
