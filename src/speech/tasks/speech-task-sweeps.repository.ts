import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { STALE_SECONDS } from './speech-tasks.repository';

/** The SQL of the scheduler's safety nets: tasks whose job may be lost, and retention of finished tasks. */
@Injectable()
export class SpeechTaskSweepsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Tasks whose job may be lost: processing with a dead worker, or queued and untouched for a while (they are touched now). */
  async stalled(limit: number): Promise<string[]> {
    const rows = await this.rows<{ id: string }>(
      `WITH s AS (
         SELECT id, status FROM speech_tasks
         WHERE (status = 'processing' AND heartbeat_at < now() - make_interval(secs => $1))
            OR (status = 'queued' AND COALESCE(heartbeat_at, created_at) < now() - make_interval(secs => $1))
         ORDER BY created_at LIMIT $2),
       touched AS (UPDATE speech_tasks t SET heartbeat_at = now() FROM s WHERE t.id = s.id AND s.status = 'queued')
       SELECT id FROM s`,
      [STALE_SECONDS, limit],
    );
    return rows.map((r) => r.id);
  }

  /** Retention: completed tasks past expires_at lose their file and their text, and become expired. */
  async expireCompleted(): Promise<number> {
    const rows = await this.rows(
      `WITH expired AS (UPDATE speech_tasks SET status = 'expired', job = jsonb_set(job, '{text}', '""'), plan = '[]'::jsonb
                        WHERE status = 'completed' AND expires_at <= now() RETURNING id),
       gone AS (DELETE FROM speech_task_results r USING expired e WHERE r.task_id = e.id)
       SELECT id FROM expired`,
      [],
    );
    return rows.length;
  }

  /** Chunks of failed tasks are never assembled (a safety net: failing deletes them already). */
  async purgeFailedChunks(): Promise<void> {
    await this.rows(
      `WITH gone AS (DELETE FROM speech_task_chunks c USING speech_tasks t WHERE c.task_id = t.id AND t.status IN ('failed', 'expired') RETURNING 1)
       SELECT count(*) FROM gone`,
      [],
    );
  }

  /** Every statement here ends in a SELECT or RETURNING, so the driver hands back rows. */
  private rows<T = unknown>(sql: string, params: unknown[]): Promise<T[]> {
    return this.dataSource.query<T[]>(sql, params);
  }
}
