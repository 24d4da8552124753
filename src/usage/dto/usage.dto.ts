import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches } from 'class-validator';
import { ListQueryDto } from '../../common/http/pagination.dto';

/** A usage record's id: `usage_` and a number that grows with time (newer records have larger numbers). */
export const USAGE_ID = /^usage_[1-9][0-9]{0,17}$/;

/** With neither `request_id` nor `task_id`: every record of the key, newest first, in cursor pages. */
export class UsageQueryDto extends ListQueryDto {
  /**
   * A request id: an HTTP request's `x-svc-request-id`; a speech stream's `trace_id` (every record of the
   * stream) or the `request_id` of one of its `task_continued` messages (that text's records); an async
   * task's chunk id (`req_task_…_<n>`).
   */
  @IsOptional()
  @IsString()
  @Matches(/^req_[0-9A-Za-z]{1,64}(_[0-9A-Za-z]{1,64}){0,2}$/, { message: 'request_id must be a req_… id' })
  request_id?: string;

  /** An async speech task's id (`task_…`): the records of every chunk of the task. */
  @IsOptional()
  @IsString()
  @Matches(/^task_[0-9A-Za-z]{1,64}$/, { message: 'task_id must be a task_… id' })
  task_id?: string;
}

export class UsageAttemptDto {
  provider!: string;
  model!: string;
  @ApiProperty({ type: 'integer' })
  level!: number;
  /** `ok`, `skipped: …` or the failure reason. */
  outcome!: string;
  @ApiProperty({ type: 'integer', nullable: true })
  latency_ms!: number | null;
  /** On a retry of the same step: its attempt number on the step, 2 for the first retry. */
  @ApiPropertyOptional({ type: 'integer', minimum: 2 })
  attempt?: number;
  /** Present (true) on a retry of the same step. */
  @ApiPropertyOptional({ type: 'boolean', enum: [true] })
  retry?: true;
  /** The account of the provider the attempt used, when the provider has several (its name, never its key). */
  account?: string;
}

export class UsageRecordDto {
  /** Identifier, `usage_…`: the `after` cursor of the list. */
  id!: string;
  @ApiProperty({ type: 'string', enum: ['usage.record'] })
  object!: 'usage.record';
  request_id!: string;
  /** `chat` or `speech`. */
  capability!: string;
  requested_model!: string;
  /** Provider that served the request; null when none did. */
  provider!: string | null;
  model!: string | null;
  @ApiProperty({ type: 'integer', nullable: true })
  fallback_level!: number | null;
  /** HTTP status answered to the client. */
  @ApiProperty({ type: 'integer' })
  status!: number;
  @ApiProperty({ type: 'integer' })
  latency_ms!: number;
  attempts!: UsageAttemptDto[];
  @ApiProperty({ type: 'integer', nullable: true })
  prompt_tokens!: number | null;
  @ApiProperty({ type: 'integer', nullable: true })
  completion_tokens!: number | null;
  @ApiProperty({ type: 'integer', nullable: true })
  total_tokens!: number | null;
  @ApiProperty({ type: 'integer', nullable: true })
  characters!: number | null;
  /** Unix time in seconds. */
  @ApiProperty({ type: 'integer' })
  created_at!: number;
}

export class UsageListDto {
  @ApiProperty({ type: 'string', enum: ['list'] })
  object!: 'list';
  data!: UsageRecordDto[];
  /** Whether more records follow. */
  has_more!: boolean;
  /** Id of the first record of the page. */
  first_id!: string | null;
  /** Id of the last record of the page: the `after` cursor of the next page. */
  last_id!: string | null;
}
