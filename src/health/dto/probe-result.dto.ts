import { ApiProperty } from '@nestjs/swagger';

/** A passed probe (terminus's result): every check is `{"status":"up"}`. */
export class ProbeResultDto {
  @ApiProperty({ enum: ['ok'] })
  status!: 'ok';
  /** The checks that passed, by name: `database`, `migrations`, `queue`, `shutdown` (none for /healthz). */
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'object', properties: { status: { type: 'string', enum: ['up'] } } },
  })
  info!: Record<string, { status: 'up' }>;
  /** Always empty on a 200: a failed check answers 503 in the error shape instead. */
  @ApiProperty({ type: 'object', additionalProperties: true })
  error!: Record<string, unknown>;
  /** Same as `info`. */
  @ApiProperty({ type: 'object', additionalProperties: true })
  details!: Record<string, unknown>;
}
