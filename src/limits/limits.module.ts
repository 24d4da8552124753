import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { RateLimitCounterEntity } from './rate-limit-counter.entity';
import { RateLimiter } from './rate-limiter.service';

/** Per-key request rate limit, shared by the HTTP guard and the speech WebSocket upgrade. */
@Module({
  imports: [TypeOrmModule.forFeature([RateLimitCounterEntity])],
  providers: [RateLimiter],
  exports: [RateLimiter],
})
export class LimitsModule {}
