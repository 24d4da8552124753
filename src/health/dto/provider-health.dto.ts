import { ApiProperty } from '@nestjs/swagger';

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
}

export class ProviderHealthDto {
  /** `operational` when every provider is healthy, `down` when every one is down, else `degraded`. */
  @ApiProperty({ enum: ['operational', 'degraded', 'down'] })
  overall!: 'operational' | 'degraded' | 'down';
  /** One entry per provider in the key's failover chain, in chain order. */
  providers!: ProviderHealthEntryDto[];
}
