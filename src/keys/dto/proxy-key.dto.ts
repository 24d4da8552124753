import { ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsOptional,
  IsString,
  MaxLength,
  MinLength,
  ValidateNested,
} from 'class-validator';
import { CHAIN_NOT_EMPTY, ChainStepDto } from '../../config/chain-step.dto';

/** A key with no step could serve nothing. */

export class CreateProxyKeyDto {
  /** Label of the key (the tenant). */
  @ApiProperty({ example: 'team-a' })
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  name!: string;

  /** Ordered failover chain: 1 to 32 steps. */
  // the offline providers every fresh start has, so Swagger UI's first Execute succeeds
  @ApiProperty({
    type: [ChainStepDto],
    example: [
      { provider: 'echo', model: 'echo-1' },
      { provider: 'espeak', model: 'speech-02-hd' },
    ],
  })
  @IsArray()
  @ArrayMinSize(1, { message: CHAIN_NOT_EMPTY })
  @ArrayMaxSize(32)
  @ValidateNested({ each: true })
  @Type(() => ChainStepDto)
  chain!: ChainStepDto[];
}

export class UpdateProxyKeyDto {
  /** New label. */
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(256)
  name?: string;

  /** New failover chain (1 to 32 steps); takes effect on the next request on every replica. */
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1, { message: CHAIN_NOT_EMPTY })
  @ArrayMaxSize(32)
  @ValidateNested({ each: true })
  @Type(() => ChainStepDto)
  chain?: ChainStepDto[];
}

export class ProxyKeyDto {
  /** `pk_` identifier. */
  id!: string;
  @ApiProperty({ type: 'string', enum: ['proxy_key'] })
  object!: 'proxy_key';
  name!: string;
  chain!: ChainStepDto[];
  /** Last four characters of the secret. */
  secret_hint!: string;
  /** Unix time in seconds. */
  @ApiProperty({ type: 'integer' })
  created_at!: number;
  /** Unix time in seconds. */
  @ApiProperty({ type: 'integer' })
  updated_at!: number;
}

export class CreatedProxyKeyDto extends ProxyKeyDto {
  /** The bearer secret, shown only in this response. */
  secret!: string;
}

export class ProxyKeyListDto {
  @ApiProperty({ type: 'string', enum: ['list'] })
  object!: 'list';
  data!: ProxyKeyDto[];
}

export class DeletedProxyKeyDto {
  id!: string;
  @ApiProperty({ type: 'string', enum: ['proxy_key'] })
  object!: 'proxy_key';
  deleted!: boolean;
}
