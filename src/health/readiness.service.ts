import { DatabaseStatus } from '../database/database-status';
import { Injectable, Logger, ServiceUnavailableException } from '@nestjs/common';
import { HealthCheckResult, HealthCheckService, HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { DomainError } from '../common/errors/domain-error';
import { withTimeout } from '../common/with-timeout';
import { JobQueue } from '../database/job-queue';
import { ProbeResultDto } from './dto/probe-result.dto';
import { ShutdownState } from './shutdown-state';

const PING_TIMEOUT_MS = 2000;

const passed = (result: HealthCheckResult): ProbeResultDto => ({
  status: 'ok',
  info: (result.info ?? {}) as ProbeResultDto['info'],
  error: result.error ?? {},
  details: result.details,
});

/**
 * Readiness: the database answers, every migration is applied, the job queue runs, and the
 * process is not shutting down. A failure is a 503 in the error shape naming what is down.
 */
@Injectable()
export class Readiness {
  private readonly logger = new Logger(Readiness.name);
  /** Migrations, once seen applied, stay applied for the life of the process. */
  private migrationsApplied = false;
  private lastFailure: string | null = null;

  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly databaseStatus: DatabaseStatus,
    private readonly queue: JobQueue,
    private readonly shutdown: ShutdownState,
  ) {}

  /** Liveness: the process runs and its event loop answers (no dependency is checked). */
  async live(): Promise<ProbeResultDto> {
    return passed(await this.health.check([]));
  }

  async ready(): Promise<ProbeResultDto> {
    try {
      const result = await this.health.check([
        () => this.database(),
        () => this.migrations(),
        () => this.jobQueue(),
        () => this.accepting(),
      ]);
      if (this.lastFailure !== null) this.logger.log('ready again');
      this.lastFailure = null;
      return passed(result);
    } catch (err) {
      if (!(err instanceof ServiceUnavailableException)) throw err;
      const { error } = err.getResponse() as HealthCheckResult;
      const reasons = Object.entries(error ?? {}).map(
        ([name, detail]) => `${name} (${String(detail?.message ?? 'down')})`,
      );
      const message = `Not ready: ${reasons.join(', ') || 'shutting down'}.`;
      if (message !== this.lastFailure) this.logger.warn(message);
      this.lastFailure = message;
      throw new DomainError('not_ready', message);
    }
  }

  private async database(): Promise<HealthIndicatorResult> {
    const check = this.indicators.check('database');
    try {
      await withTimeout(this.databaseStatus.ping(), PING_TIMEOUT_MS);
      return check.up();
    } catch (err) {
      return check.down({ message: `unreachable: ${(err as Error).message}` });
    }
  }

  private async migrations(): Promise<HealthIndicatorResult> {
    const check = this.indicators.check('migrations');
    if (this.migrationsApplied) return check.up();
    try {
      const pending = await withTimeout(this.databaseStatus.migrationsPending(), PING_TIMEOUT_MS);
      this.migrationsApplied = !pending;
      return pending ? check.down({ message: 'some migrations are not applied' }) : check.up();
    } catch (err) {
      return check.down({ message: `not checked: ${(err as Error).message}` });
    }
  }

  private jobQueue(): HealthIndicatorResult {
    const check = this.indicators.check('queue');
    return this.queue.running ? check.up() : check.down({ message: 'the job queue is not running' });
  }

  private accepting(): HealthIndicatorResult {
    const check = this.indicators.check('shutdown');
    return this.shutdown.isDraining ? check.down({ message: 'shutting down' }) : check.up();
  }
}
