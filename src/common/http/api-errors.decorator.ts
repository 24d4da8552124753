import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiResponse } from '@nestjs/swagger';
import { ERROR_TYPES } from '../errors/error-codes';

class ErrorDetailDto {
  @ApiProperty({ description: 'Human-readable explanation.' })
  message!: string;

  @ApiProperty({
    description: 'Category of the error.',
    enum: [...ERROR_TYPES],
  })
  type!: string;

  @ApiProperty({ description: 'The request field at fault, if any.', type: String, nullable: true })
  param!: string | null;

  @ApiProperty({
    description: 'Specific reason, e.g. `missing_field`, `file_too_large`.',
    type: String,
    nullable: true,
  })
  code!: string | null;
}

export class ErrorResponseDto {
  @ApiProperty({ type: ErrorDetailDto })
  error!: ErrorDetailDto;
}

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request: malformed JSON, a missing, unknown or out-of-range field (`param` names it).',
  401: 'Missing or incorrect API key.',
  403: 'Not allowed with this credential.',
  404: 'Unknown id (or one that belongs to another key).',
  409: 'Conflict with the current state.',
  410: 'Gone: past its retention.',
  413: 'Payload too large.',
  415: 'Unsupported media type.',
  429: 'Rate limited, or a storage quota of the key is full (`quota_exceeded`).',
  502: 'Every upstream provider failed.',
  503: 'No provider available (every step skipped: `Retry-After` says when the soonest is served again), or the database is unavailable.',
  507: 'The database is short of room (the free-space guard): nothing new is stored until there is room.',
};

/** Documents error responses, all in the one error body shape. */
export const ApiErrors = (...statuses: number[]): MethodDecorator & ClassDecorator =>
  applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({ status, description: DESCRIPTIONS[status] ?? 'Error.', type: ErrorResponseDto }),
    ),
  );
