import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

/**
 * The conduct settings' defaults (decisions §2, §3): one table, read by the failover core and the upstream client,
 * documented in docs/providers.md. A chain step's own value wins over its provider's, which wins over these.
 */
export const CONDUCT_DEFAULTS: Readonly<{
  timeoutMs: number;
  firstTokenTimeoutMs: number;
  streamIdleTimeoutMs: number;
  retries: number;
  retryAfterMaxMs: number;
  queueTimeoutMs: number;
}> = {
  /** To the response headers for a stream, to the whole body otherwise. */
  timeoutMs: 30000,
  /** Streams: from the response headers to the first data event. */
  firstTokenTimeoutMs: 10000,
  /** The longest silence between a stream's events once it has begun. */
  streamIdleTimeoutMs: 20000,
  /** Extra attempts on the same step after a transient fault, before the first byte. */
  retries: 1,
  /** A 429 is retried on the same step only when its Retry-After is at most this. */
  retryAfterMaxMs: 5000,
  /** A provider with accounts: how long a call waits for a free account slot before the next step (§7). */
  queueTimeoutMs: 250,
};

export const MAX_RETRIES = 5;

/** Conduct settings a provider declares and a chain step may override (decisions §2), validated the same in both. */
export class ConductSettings {
  /** Time allowed for the upstream answer: to its headers for a stream, to its whole body otherwise. Default 30000. */
  @ApiPropertyOptional({ type: 'integer', minimum: 100, maximum: 600000 })
  @IsOptional()
  @IsInt({ message: 'timeout_ms must be a whole number of milliseconds' })
  @Min(100)
  @Max(600000)
  timeout_ms?: number;

  /** Streams: time allowed from the response headers to the first data event. Default 10000. */
  @ApiPropertyOptional({ type: 'integer', minimum: 100, maximum: 600000 })
  @IsOptional()
  @IsInt({ message: 'first_token_timeout_ms must be a whole number of milliseconds' })
  @Min(100)
  @Max(600000)
  first_token_timeout_ms?: number;

  /** The longest silence between a stream's events once it has begun. Default 20000. */
  @ApiPropertyOptional({ type: 'integer', minimum: 100, maximum: 3600000 })
  @IsOptional()
  @IsInt({ message: 'stream_idle_timeout_ms must be a whole number of milliseconds' })
  @Min(100)
  @Max(3600000)
  stream_idle_timeout_ms?: number;

  /** Extra attempts on the same step after a transient fault before the first byte (0 to 5). Default 1. */
  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: MAX_RETRIES })
  @IsOptional()
  @IsInt({ message: 'retries must be a whole number' })
  @Min(0, { message: 'retries must be at least 0' })
  @Max(MAX_RETRIES, { message: `retries must be at most ${MAX_RETRIES}` })
  retries?: number;

  /** A 429 is retried on the same step only when its Retry-After is at most this (0 to 60000). Default 5000. */
  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 60000 })
  @IsOptional()
  @IsInt({ message: 'retry_after_max_ms must be a whole number of milliseconds' })
  @Min(0)
  @Max(60000)
  retry_after_max_ms?: number;

  /** A provider with accounts: how long a call waits for a free account slot, then the next step (0 to 60000). Default 250. */
  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 60000 })
  @IsOptional()
  @IsInt({ message: 'queue_timeout_ms must be a whole number of milliseconds' })
  @Min(0)
  @Max(60000)
  queue_timeout_ms?: number;
}

const CONDUCT_FIELDS = [
  'timeout_ms',
  'first_token_timeout_ms',
  'stream_idle_timeout_ms',
  'retries',
  'retry_after_max_ms',
  'queue_timeout_ms',
] as const satisfies ReadonlyArray<keyof ConductSettings>;

/** The conduct settings `settings` sets, as plain JSON (a stored chain step keeps only those). */
export function conductOf(settings: ConductSettings): ConductSettings {
  const out: ConductSettings = {};
  for (const field of CONDUCT_FIELDS) if (settings[field] !== undefined) out[field] = settings[field];
  return out;
}
