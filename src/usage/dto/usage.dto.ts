import { IsString, Matches } from 'class-validator';

export class UsageQueryDto {
  /** The `x-svc-request-id` of the request. */
  @IsString() @Matches(/^req_[0-9A-Za-z]{1,64}$/, { message: 'request_id must be a req_… id' })
  request_id!: string;
}

export class UsageAttemptDto {
  provider!: string;
  model!: string;
  level!: number;
  /** `ok`, `skipped: …` or the failure reason. */
  outcome!: string;
  latency_ms!: number | null;
}

export class UsageRecordDto {
  object!: 'usage.record';
  request_id!: string;
  /** `chat` or `speech`. */
  capability!: string;
  requested_model!: string;
  /** Provider that served the request; null when none did. */
  provider!: string | null;
  model!: string | null;
  fallback_level!: number | null;
  /** HTTP status answered to the client. */
  status!: number;
  latency_ms!: number;
  attempts!: UsageAttemptDto[];
  prompt_tokens!: number | null;
  completion_tokens!: number | null;
  total_tokens!: number | null;
  characters!: number | null;
  /** Unix time in seconds. */
  created_at!: number;
}

export class UsageListDto {
  object!: 'list';
  data!: UsageRecordDto[];
}
