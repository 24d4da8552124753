import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

/** One account of a provider with several (decisions §7): its own circuit, and its calls in flight on this replica. */
export class ProviderAccountHealthDto {
  /** Account name (never its key). */
  name!: string;
  @ApiProperty({ enum: ['healthy', 'degraded', 'recovering', 'down'] })
  status!: 'healthy' | 'degraded' | 'recovering' | 'down';
  /** Calls in flight on the account, counted by the replica that answers. */
  @ApiProperty({ type: 'integer' })
  in_flight!: number;
  @ApiProperty({ type: 'integer' })
  consecutive_failures!: number;
}

export class ProviderHealthEntryDto {
  /** Provider name. */
  provider!: string;
  @ApiProperty({ enum: ['healthy', 'degraded', 'recovering', 'down'] })
  status!: 'healthy' | 'degraded' | 'recovering' | 'down';
  /** Count of consecutive failures. */
  @ApiProperty({ type: 'integer' })
  consecutive_failures!: number;
  /** Seconds until the next probe; counts down while the status is `down`, 0 otherwise. */
  @ApiProperty({ type: 'integer' })
  cooldown_remaining_secs!: number;
  /** False when the chain names a provider this gateway does not have configured (e.g. its api_key is unset): it is then `down`. */
  configured!: boolean;
  /** A provider with several accounts: each one; the provider is `down` only when every account is. */
  @ApiPropertyOptional({ type: [ProviderAccountHealthDto] })
  accounts?: ProviderAccountHealthDto[];
}

export class ProviderHealthDto {
  /** `operational` when every provider is healthy, `down` when every one is down, else `degraded`. */
  @ApiProperty({ enum: ['operational', 'degraded', 'down'] })
  overall!: 'operational' | 'degraded' | 'down';
  /** One entry per provider in the key's failover chain, in chain order. */
  providers!: ProviderHealthEntryDto[];
}
