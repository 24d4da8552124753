import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';

export const DEFAULT_PAGE_SIZE = 20;

/** Cursor pagination query, as OpenAI's list endpoints take it. */
export class ListQueryDto {
  /** Id of the object to start after (the `last_id` of the previous page). */
  @IsOptional()
  @IsString()
  @MinLength(1)
  @MaxLength(128)
  after?: string;

  /** Page size, 1 to 100. */
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, default: DEFAULT_PAGE_SIZE })
  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  limit?: number = DEFAULT_PAGE_SIZE;
}

export interface Page<T extends { id: string }> {
  object: 'list';
  data: T[];
  has_more: boolean;
  first_id: string | null;
  last_id: string | null;
}

/** A page from `limit + 1` fetched rows: the extra row only tells whether more follow. */
export function toPage<T extends { id: string }>(rows: T[], limit: number): Page<T> {
  const data = rows.slice(0, limit);
  return {
    object: 'list',
    data,
    has_more: rows.length > limit,
    first_id: data[0]?.id ?? null,
    last_id: data[data.length - 1]?.id ?? null,
  };
}
