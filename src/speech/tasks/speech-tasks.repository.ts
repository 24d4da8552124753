import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, EntityManager, Repository } from 'typeorm';
import type { SpeechJob } from '../speech-job';
import type { TaskChunk } from './chunk-plan';
import { SpeechTaskEntity, TaskAudio, TaskError } from './speech-task.entity';
import type { VoicePin, VoiceSwitchPolicy } from './voice-pin';

export type NewTask = Pick<
  SpeechTaskEntity,
  'id' | 'keyId' | 'model' | 'job' | 'plan' | 'characters' | 'chunksTotal' | 'voiceSwitch'
> &
  Partial<Pick<SpeechTaskEntity, 'traceparent'>>;

/** A task its worker holds: the claim's attempt number and what it needs to synthesise. */
export interface ClaimedTask {
  id: string;
  keyId: string;
  attempts: number;
  job: SpeechJob;
  plan: TaskChunk[];
  error: TaskError | null;
  /** The step that speaks the task's chunks; null until its first chunk is stored. */
  voicePin: VoicePin | null;
  voiceSwitch: VoiceSwitchPolicy;
  /** The creating request's traceparent (decisions §12). */
  traceparent?: string | null;
}

export interface StoredChunk {
  idx: number;
  pcm: Buffer;
  provider: string;
  level: number;
  /** The step that spoke it: stored only while it is the task's pin (the first chunk sets it). */
  pin: VoicePin;
  /** What the chunk adds to `characters_done` (its characters times the synthesis share: see task-progress.ts). */
  chars: number;
}

/** Seconds without a heartbeat after which a processing task is taken to be abandoned (its worker died). */
export const STALE_SECONDS = 30;

/** Only the worker that holds the task may write for it (row-locked so a takeover cannot interleave). */
const OWNED = `SELECT id FROM speech_tasks WHERE id = $1 AND worker_id = $2 AND status = 'processing' FOR UPDATE`;

/** The SQL of async speech tasks, sweeps aside. Every write of a worker is conditioned on still holding the task. */
@Injectable()
export class SpeechTasksRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(SpeechTaskEntity) private readonly tasks: Repository<SpeechTaskEntity>,
  ) {}

  /** The task row and its job are written together or not at all. */
  /**
   * Null when the key already has `maxPending` tasks queued or processing: a per-key transaction lock makes
   * concurrent submits (on any replica) count one after another.
   */
  insertWithJob(
    task: NewTask,
    maxPending: number,
    enqueue: (manager: EntityManager) => Promise<unknown>,
  ): Promise<SpeechTaskEntity | null> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`speech_tasks:${task.keyId}`]);
      const [{ n }] = await manager.query<Array<{ n: number }>>(
        `SELECT count(*)::int AS n FROM speech_tasks WHERE key_id = $1 AND status IN ('queued', 'processing')`,
        [task.keyId],
      );
      if (n >= maxPending) return null;
      await manager.insert(SpeechTaskEntity, { ...task, status: 'queued' });
      await enqueue(manager);
      return manager.findOneByOrFail(SpeechTaskEntity, { id: task.id });
    });
  }

  /** The record without the text (status polls stay cheap on 200,000-character tasks). */
  findOwned(keyId: string, id: string): Promise<SpeechTaskEntity | null> {
    return this.tasks.findOneBy({ id, keyId });
  }

  /**
   * Claims the next task fairly across keys (decisions §11), whichever task's job woke the worker: among the
   * tasks ready to run (queued and past `run_after`, or processing with a dead worker), the oldest of the key
   * with the fewest tasks running, ties to the key claimed least recently. So a key's backlog never keeps
   * another key's first task waiting for more than the task each busy worker is on. Claims are serialised
   * across replicas (a transaction lock), so two workers never both take a key for idle.
   */
  claimNext(workerId: string): Promise<ClaimedTask | null> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query(`SELECT pg_advisory_xact_lock(hashtextextended('speech_tasks:claim', 0))`);
      const [row] = await manager.query<
        Array<
          Omit<ClaimedTask, 'voicePin' | 'voiceSwitch'> & {
            key_id: string;
            voice_pin: VoicePin | null;
            voice_switch: VoiceSwitchPolicy;
          }
        >
      >(
        `WITH running AS (
           SELECT key_id, count(*) AS n FROM speech_tasks
           WHERE status = 'processing' AND heartbeat_at >= now() - make_interval(secs => $2) GROUP BY key_id),
         ready AS (
           SELECT DISTINCT ON (key_id) id, key_id, created_at FROM speech_tasks
           WHERE (status = 'queued' AND (run_after IS NULL OR run_after <= now()))
              OR (status = 'processing' AND heartbeat_at < now() - make_interval(secs => $2))
           ORDER BY key_id, created_at, id),
         next AS (
           SELECT r.id FROM ready r LEFT JOIN running u ON u.key_id = r.key_id
           ORDER BY COALESCE(u.n, 0), (SELECT max(c.claimed_at) FROM speech_tasks c WHERE c.key_id = r.key_id) NULLS FIRST, r.created_at, r.id
           LIMIT 1),
         claimed AS (
           UPDATE speech_tasks t SET status = 'processing', worker_id = $1, heartbeat_at = now(), claimed_at = now(), run_after = NULL,
             attempts = attempts + 1, started_at = COALESCE(started_at, now())
           FROM next WHERE t.id = next.id
           RETURNING t.id, t.key_id, t.attempts, t.job, t.plan, t.error, t.voice_pin, t.voice_switch, t.traceparent)
         SELECT * FROM claimed`,
        [workerId, STALE_SECONDS],
      );
      return row
        ? {
            id: row.id,
            keyId: row.key_id,
            attempts: row.attempts,
            job: row.job,
            plan: row.plan,
            error: row.error,
            voicePin: row.voice_pin,
            voiceSwitch: row.voice_switch,
            traceparent: row.traceparent,
          }
        : null;
    });
  }

  async storedChunks(id: string): Promise<Set<number>> {
    const rows = await this.rows<{ idx: number }>(`SELECT idx FROM speech_task_chunks WHERE task_id = $1`, [id]);
    return new Set(rows.map((r) => r.idx));
  }

  /** False once another worker holds the task (or it ended): the caller stops. */
  async heartbeat(id: string, workerId: string): Promise<boolean> {
    const rows = await this.rows(
      `WITH o AS (${OWNED}), u AS (UPDATE speech_tasks t SET heartbeat_at = now() FROM o WHERE t.id = o.id RETURNING t.id) SELECT id FROM u`,
      [id, workerId],
    );
    return rows.length > 0;
  }

  async isOwner(id: string, workerId: string): Promise<boolean> {
    return (
      (
        await this.rows(`SELECT 1 FROM speech_tasks WHERE id = $1 AND worker_id = $2 AND status = 'processing'`, [
          id,
          workerId,
        ])
      ).length > 0
    );
  }

  /**
   * The chunk and the task's progress in one statement, only when the step that spoke it is the task's pin (the
   * first chunk pins it): a chunk finished on a step the task has switched away from meanwhile is refused (redone).
   * Its pin wait ends. The task names the deepest step that served any of its chunks (the one stored first on a
   * tie): a task reports `fallback_level` 0 only when its entry step spoke every word.
   */
  async storeChunk(id: string, workerId: string, chunk: StoredChunk): Promise<boolean> {
    const rows = await this.rows(
      `WITH o AS (SELECT id, voice_pin FROM speech_tasks WHERE id = $1 AND worker_id = $2 AND status = 'processing' FOR UPDATE),
       ins AS (INSERT INTO speech_task_chunks (task_id, idx, pcm, provider, fallback_level)
               SELECT id, $3, $4, $5, $6 FROM o WHERE o.voice_pin IS NULL OR o.voice_pin = $8::jsonb
               ON CONFLICT DO NOTHING RETURNING task_id),
       u AS (UPDATE speech_tasks t SET chunks_done = chunks_done + 1, characters_done = characters_done + $7, heartbeat_at = now(),
               voice_pin = COALESCE(t.voice_pin, $8::jsonb), pin_waits = t.pin_waits - ($3::int)::text,
               provider = CASE WHEN t.fallback_level IS NULL OR $6 > t.fallback_level THEN $5 ELSE t.provider END,
               fallback_level = CASE WHEN t.fallback_level IS NULL OR $6 > t.fallback_level THEN $6 ELSE t.fallback_level END
             FROM ins WHERE t.id = ins.task_id RETURNING t.id)
       SELECT id FROM u`,
      [id, workerId, chunk.idx, chunk.pcm, chunk.provider, chunk.level, chunk.chars, JSON.stringify(chunk.pin)],
    );
    return rows.length > 0;
  }

  /** Assembly's progress: never backwards (a resumed assembly starts over), never all characters before `complete`. */
  async assemblyProgress(id: string, workerId: string, charactersDone: number): Promise<boolean> {
    const rows = await this.rows(
      `WITH o AS (${OWNED}),
       u AS (UPDATE speech_tasks t SET characters_done = GREATEST(t.characters_done, LEAST(t.characters - 1, $3)) FROM o WHERE t.id = o.id RETURNING t.id)
       SELECT id FROM u`,
      [id, workerId, charactersDone],
    );
    return rows.length > 0;
  }

  async chunkPcm(id: string, idx: number): Promise<Buffer | null> {
    const [row] = await this.rows<{ pcm: Buffer }>(
      `SELECT pcm FROM speech_task_chunks WHERE task_id = $1 AND idx = $2`,
      [id, idx],
    );
    return row?.pcm ?? null;
  }

  /** Total PCM bytes and every provider that served a chunk, chunk 0's first. */
  async chunkSummary(
    id: string,
  ): Promise<{ count: number; bytes: number; providers: Array<{ provider: string; level: number }> }> {
    const rows = await this.rows<{ idx: number; bytes: number; provider: string; fallback_level: number }>(
      `SELECT idx, octet_length(pcm) AS bytes, provider, fallback_level FROM speech_task_chunks WHERE task_id = $1 ORDER BY idx`,
      [id],
    );
    return {
      count: rows.length,
      bytes: rows.reduce((sum, r) => sum + Number(r.bytes), 0),
      providers: rows.map((r) => ({ provider: r.provider, level: r.fallback_level })),
    };
  }

  /** Parts of an earlier, interrupted assembly. */
  async clearResult(id: string, workerId: string): Promise<boolean> {
    const rows = await this.rows(
      `WITH o AS (${OWNED}), d AS (DELETE FROM speech_task_results r USING o WHERE r.task_id = o.id) SELECT id FROM o`,
      [id, workerId],
    );
    return rows.length > 0;
  }

  async insertPart(id: string, workerId: string, part: number, data: Buffer): Promise<boolean> {
    const rows = await this.rows(
      `WITH o AS (${OWNED}), ins AS (INSERT INTO speech_task_results (task_id, part, data) SELECT id, $3, $4 FROM o RETURNING task_id) SELECT task_id FROM ins`,
      [id, workerId, part, data],
    );
    return rows.length > 0;
  }

  /** Completed once: only the holder completes, and the chunks go in the same statement. */
  async complete(id: string, workerId: string, audio: TaskAudio, ttlSeconds: number): Promise<boolean> {
    const rows = await this.rows(
      `WITH o AS (${OWNED}),
       done AS (UPDATE speech_tasks t SET status = 'completed', audio = $3, error = NULL, characters_done = characters,
                  completed_at = now(), expires_at = now() + make_interval(secs => $4), heartbeat_at = now()
                FROM o WHERE t.id = o.id RETURNING t.id),
       gone AS (DELETE FROM speech_task_chunks c USING done WHERE c.task_id = done.id)
       SELECT id FROM done`,
      [id, workerId, JSON.stringify(audio), ttlSeconds],
    );
    return rows.length > 0;
  }

  /**
   * Failed for good; with `workerId` only if still held, without it (giving up before a claim) whatever the holder.
   * A failed task is never run again, so its text and chunk plan go with its audio.
   */
  async fail(id: string, workerId: string | null, error: TaskError): Promise<boolean> {
    const rows = await this.rows(
      `WITH done AS (UPDATE speech_tasks SET status = 'failed', error = $3, worker_id = NULL, heartbeat_at = now(),
                            job = jsonb_set(job, '{text}', '""'), plan = '[]'::jsonb
                     WHERE id = $1 AND status IN ('queued', 'processing') AND ($2::text IS NULL OR worker_id = $2) RETURNING id),
       gone AS (DELETE FROM speech_task_chunks c USING done WHERE c.task_id = done.id)
       SELECT id FROM done`,
      [id, workerId, JSON.stringify(error)],
    );
    return rows.length > 0;
  }

  /**
   * Back to the queue (stored chunks kept): after a transient error, or at shutdown (`refund`: not the task's fault).
   * `enqueue` runs in the same transaction, so a released task always has a job to pick it up. A task that
   * failed is not claimed again for `retryAfterSeconds` (its own job's retry comes later still), or a free
   * worker would retry it at once and spend its attempts in seconds.
   */
  release(
    id: string,
    workerId: string,
    error: TaskError | null,
    refund: boolean,
    enqueue?: (manager: EntityManager) => Promise<unknown>,
    retryAfterSeconds = 0,
  ): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      const rows = await manager.query<unknown[]>(
        `WITH o AS (${OWNED}),
         u AS (UPDATE speech_tasks t SET status = 'queued', worker_id = NULL, heartbeat_at = now(),
                 run_after = CASE WHEN $5::float8 > 0 THEN now() + make_interval(secs => $5::float8) END,
                 error = COALESCE($3, t.error), attempts = CASE WHEN $4 THEN GREATEST(t.attempts - 1, 0) ELSE t.attempts END
               FROM o WHERE t.id = o.id RETURNING t.id)
         SELECT id FROM u`,
        [id, workerId, error && JSON.stringify(error), refund, retryAfterSeconds],
      );
      if (rows.length === 0) return false;
      if (enqueue) await enqueue(manager);
      return true;
    });
  }

  async resultPart(id: string, part: number): Promise<Buffer | null> {
    const [row] = await this.rows<{ data: Buffer }>(
      `SELECT data FROM speech_task_results WHERE task_id = $1 AND part = $2`,
      [id, part],
    );
    return row?.data ?? null;
  }

  /** Every statement here ends in a SELECT or RETURNING, so the driver hands back rows. */
  private rows<T = unknown>(sql: string, params: unknown[]): Promise<T[]> {
    return this.dataSource.query<T[]>(sql, params);
  }
}
