import { plainToInstance, Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  MinLength,
  validateSync,
} from 'class-validator';
import { rawBool, toSeconds } from './env-transforms';
import { SpeechEnvironment } from './speech-env.schema';

/** A webhook retry schedule: comma-separated waits like `30s,2m,1h` (empty: a single attempt). */
const RETRY_SCHEDULE = /^\s*(\d+[smhd]?\s*(,\s*\d+[smhd]?\s*)*)?$/i;

/** Every environment variable the service reads. Invalid values stop the boot. */
export class EnvironmentVariables extends SpeechEnvironment {
  /** TCP port of the HTTP and WebSocket server. */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT: number = 3000;

  /** Bind address. */
  @IsOptional()
  @IsString()
  HOST: string = '0.0.0.0';

  /** PostgreSQL connection string; unset → embedded PostgreSQL in SVC_DATA_DIR. */
  @IsOptional()
  @Matches(/^postgres(ql)?:\/\//, { message: 'DATABASE_URL must start with postgres:// or postgresql://' })
  DATABASE_URL?: string;

  /** Size of the PostgreSQL connection pool (real server only; embedded uses one connection). */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(200)
  DB_POOL_SIZE: number = 10;

  /** Deadline (ms) of one statement on the PostgreSQL server (its client waits 1 s more); 0 = none. The embedded database has none. */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(600000)
  DB_STATEMENT_TIMEOUT_MS: number = 5000;

  /** Data directory of the embedded database. */
  @IsOptional()
  @IsString()
  SVC_DATA_DIR: string = '.data';

  /** Gateway YAML (providers and bootstrap keys). */
  @IsOptional()
  @IsString()
  SVC_CONFIG: string = 'config/gateway.yaml';

  /** Bearer token of the admin API; unset → admin API off (embedded `npm start` generates one). */
  @IsOptional()
  @IsString()
  @MinLength(16, { message: 'SVC_ADMIN_TOKEN must be at least 16 characters' })
  SVC_ADMIN_TOKEN?: string;

  /** Create and print a demo key on first start with an empty database (default: only in embedded mode). */
  @IsOptional()
  @Transform(rawBool)
  @IsBoolean()
  SVC_DEMO_KEY?: boolean;

  /** A client must send its whole request head within this (Node's headersTimeout). */
  @IsOptional()
  @IsInt()
  @Min(1000)
  SVC_HTTP_HEADERS_TIMEOUT_MS: number = 10000;

  /** A client must send its whole request, body included, within this (Node's requestTimeout; answers may stream longer). */
  @IsOptional()
  @IsInt()
  @Min(1000)
  SVC_HTTP_REQUEST_TIMEOUT_MS: number = 60000;

  /** An idle keep-alive connection is closed after this. */
  @IsOptional()
  @IsInt()
  @Min(1000)
  SVC_HTTP_KEEP_ALIVE_TIMEOUT_MS: number = 5000;

  /** Open connections (HTTP and WebSocket) one replica accepts; more are refused at once. */
  @IsOptional()
  @IsInt()
  @Min(1)
  SVC_HTTP_MAX_CONNECTIONS: number = 10000;

  /** An HTTP answer whose client leaves it unread (its socket's buffer full) this long is dropped and its upstream call cancelled. */
  @IsOptional()
  @IsInt()
  @Min(100)
  SVC_HTTP_STALL_MS: number = 30000;

  /** Sockets the gateway keeps to each upstream provider origin (undici pool). */
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(4096)
  SVC_UPSTREAM_CONNECTIONS: number = 64;

  /** The fraction of a provider's sockets one key may hold at once (at least one socket); its calls past it wait in the gateway. */
  @IsOptional()
  @IsNumber()
  @Min(0.01)
  @Max(1)
  SVC_UPSTREAM_KEY_SHARE: number = 0.5;

  /** Serve Swagger UI at /docs and the document at /openapi.json (false: neither route exists). */
  @IsOptional()
  @Transform(rawBool)
  @IsBoolean()
  SVC_DOCS: boolean = true;

  /** Consecutive failures that open a provider's circuit. */
  @IsOptional()
  @IsInt()
  @Min(1)
  SVC_BREAKER_THRESHOLD: number = 5;

  /** How long an open circuit skips its provider before a probe. */
  @IsOptional()
  @IsInt()
  @Min(100)
  SVC_BREAKER_COOLDOWN_MS: number = 30000;

  /** How often (ms) each replica re-reads shared state (keys, breakers) as a safety net to NOTIFY. */
  @IsOptional()
  @IsInt()
  @Min(50)
  SVC_SYNC_INTERVAL_MS: number = 1000;

  /** A voice its provider failed to delete is tried again this long after, then twice as long after each failure (at most 1 h). */
  @IsOptional()
  @IsInt()
  @Min(50)
  SVC_VOICE_REMOVAL_RETRY_MS: number = 60000;

  /** MiniMax-native uploads (`/v1/files/upload`) one key may hold unexpired at once; more are refused with 429. */
  @IsOptional()
  @IsInt()
  @Min(1)
  SVC_QUOTA_PENDING_UPLOADS: number = 20;

  /** Bytes of those uploads one key may hold at once (200 MB); an upload past it is refused with 429. */
  @IsOptional()
  @IsInt()
  @Min(1)
  SVC_QUOTA_PENDING_UPLOAD_BYTES: number = 200_000_000;

  /** Voice consents one key may hold; more are refused with 429. */
  @IsOptional()
  @IsInt()
  @Min(1)
  SVC_QUOTA_CONSENTS: number = 1000;

  /** Unexpired `output_format: "url"` audio links one key may hold; more are refused with 429. */
  @IsOptional()
  @IsInt()
  @Min(1)
  SVC_QUOTA_AUDIO_LINKS: number = 1000;

  /** Bytes the database may grow to (`pg_database_size`) before stored-data writes are refused with 507; 0 = no budget. */
  @IsOptional()
  @IsInt()
  @Min(0)
  SVC_STORAGE_BUDGET_BYTES: number = 0;

  /** Embedded database: free bytes its data directory's disk must keep, else stored-data writes are refused with 507. */
  @IsOptional()
  @IsInt()
  @Min(0)
  SVC_STORAGE_MIN_FREE_BYTES: number = 1024 * 1024 * 1024;

  /** How often each replica samples the database's size and free space for the 507 guard. */
  @IsOptional()
  @IsInt()
  @Min(100)
  SVC_STORAGE_SAMPLE_MS: number = 30000;

  /** Requests one key may make per UTC minute, summed over replicas (0 = no limit); more get 429 with Retry-After. */
  @IsOptional()
  @IsInt()
  @Min(0)
  SVC_RATE_LIMIT_RPM: number = 0;

  /** How long usage records are kept (then deleted by the retention job): seconds, or a duration like `90d`. */
  @IsOptional()
  @Transform(toSeconds)
  @IsInt({ message: 'SVC_USAGE_RETENTION must be seconds or a duration like 12h, 30d, 90d' })
  @Min(1)
  SVC_USAGE_RETENTION: number = 90 * 86400;

  /** How long failover and recovery events are kept once fanned out to webhooks: seconds, or a duration like `30d`. */
  @IsOptional()
  @Transform(toSeconds)
  @IsInt({ message: 'SVC_EVENT_RETENTION must be seconds or a duration like 12h, 7d, 30d' })
  @Min(1)
  SVC_EVENT_RETENTION: number = 30 * 86400;

  /** Failovers of one condition (key, model, exhausted and serving provider) within this many seconds make one event and one closing count; 0 = one event per request. */
  @IsOptional()
  @Transform(toSeconds)
  @IsInt({
    message: 'SVC_FAILOVER_EVENT_WINDOW must be seconds or a duration like 30s, 1m (0 = one event per request)',
  })
  @Min(0)
  @Max(86400)
  SVC_FAILOVER_EVENT_WINDOW: number = 60;

  /** Waits before the 2nd, 3rd, … webhook delivery attempt (`30s,2m,…`): N waits mean N + 1 attempts. */
  @IsOptional()
  @Matches(RETRY_SCHEDULE, { message: 'SVC_WEBHOOK_RETRY_SCHEDULE must be comma-separated waits like 30s,2m,10m,1h' })
  SVC_WEBHOOK_RETRY_SCHEDULE: string = '30s,2m,10m,30m,1h,3h,6h';

  /** Let webhooks reach private, loopback and link-local addresses (development and tests only). */
  @IsOptional()
  @Transform(rawBool)
  @IsBoolean()
  SVC_WEBHOOK_ALLOW_PRIVATE: boolean = false;

  /**
   * How long one webhook attempt may take (connect, answer, snippet). The contract's success is a 2xx within
   * 10 s, so that is the default and the ceiling: a lower value frees lanes sooner at the cost of failing slow receivers.
   */
  @IsOptional()
  @IsInt()
  @Min(500)
  @Max(10000)
  SVC_WEBHOOK_TIMEOUT_MS: number = 10000;

  /** Test sends (`POST /v1/user/webhooks/{id}/test`) one key may make per UTC minute on one replica. */
  @IsOptional()
  @IsInt()
  @Min(1)
  SVC_WEBHOOK_TESTS_PER_MINUTE: number = 10;

  /** Encrypts webhook endpoint secrets at rest (AES-256-GCM, key derived with scrypt); unset → stored plain. */
  @IsOptional()
  @IsString()
  @MinLength(16, { message: 'SVC_SECRET_KEY must be at least 16 characters' })
  SVC_SECRET_KEY?: string;

  /** With DATABASE_URL and no SVC_SECRET_KEY the start is refused; true stores webhook secrets unencrypted instead. */
  @IsOptional()
  @Transform(rawBool)
  @IsBoolean()
  SVC_ALLOW_PLAINTEXT_SECRETS: boolean = false;

  /** SIGTERM: how long in-flight HTTP requests and speech streams get to finish before they are cut (the exit is forced 15 s later). */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(600000)
  SVC_SHUTDOWN_GRACE_MS: number = 10000;

  /** pino log level. */
  @IsOptional()
  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL: string = 'info';
}

export function validateEnvironment(raw: Record<string, unknown>): EnvironmentVariables {
  const env = plainToInstance(EnvironmentVariables, raw, { enableImplicitConversion: true, exposeDefaultValues: true });
  const errors = validateSync(env, { skipMissingProperties: false, whitelist: false });
  if (errors.length > 0) {
    const lines = errors.map((e) => `  ${e.property}: ${Object.values(e.constraints ?? {}).join('; ')}`);
    throw new Error(`Invalid environment:\n${lines.join('\n')}`);
  }
  return env;
}
