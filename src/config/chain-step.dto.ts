import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, MaxLength, Min, MinLength, ValidateNested } from 'class-validator';
import { IsStringRecord } from '../common/http/validators';
import { CONTINUATION_MODES, ContinuationMode, IsContinuation } from './continuation';
import { ConductSettings } from './conduct.dto';
import { YamlText } from './yaml-data';

/** Validation message of an empty chain (gateway.yaml and the admin API alike). */
export const CHAIN_NOT_EMPTY = 'chain must have at least one step';

export class UsageCapDto {
  /** Requests allowed per window. */
  @ApiProperty({ type: 'integer' })
  @IsInt()
  @Min(1)
  requests!: number;

  /** Window of the cap. */
  @IsIn(['minute', 'hour', 'day'])
  per!: 'minute' | 'hour' | 'day';
}

/** One step of a key's failover chain; its conduct settings (timeouts, retries) override its provider's. */
export class ChainStepDto extends ConductSettings {
  /** Name of a provider declared in the gateway configuration. */
  @ApiProperty({ example: 'echo' })
  @YamlText()
  @IsString()
  @Matches(/^[a-z0-9][a-z0-9_-]{0,62}$/, { message: 'provider must be a provider name' })
  provider!: string;

  /** Model this step sends to its provider. */
  @ApiProperty({ example: 'echo-1' })
  @YamlText()
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  model!: string;

  /** Skip this step once the key has sent this many requests to it in the window. */
  @IsOptional()
  @ValidateNested()
  @Type(() => UsageCapDto)
  usage_cap?: UsageCapDto;

  /**
   * How this step continues a chat stream that broke after its first byte on an earlier step, modes tried in order
   * (`none`: it does not); default: its provider's `continuation`, else `[prefill, restart]` for anthropic, `[restart]` for the other kinds.
   */
  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', enum: [...CONTINUATION_MODES] },
    example: ['restart'],
  })
  @IsOptional()
  @IsContinuation()
  continuation?: ContinuationMode[];

  /** Requested voice id → this provider's voice id; `*` is the default. */
  @IsOptional()
  @YamlText()
  @IsStringRecord()
  voice_map?: Record<string, string>;
}
