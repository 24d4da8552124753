import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { samePin, type VoicePin, type VoiceSwitch } from './voice-pin';

/** Only the worker that holds the task may write for it (row-locked so a takeover cannot interleave). */
const OWNED = `SELECT id, voice_pin FROM speech_tasks WHERE id = $1 AND worker_id = $2 AND status = 'processing' FOR UPDATE`;

/**
 * The SQL of a task's voice pin (decisions §7): the pin wait of each chunk its step fails, measured on the
 * database's clock from the chunk's first failure (so a restart or another replica goes on with the same wait),
 * and the switch to another step. A chunk's store ends its wait (SpeechTasksRepository.storeChunk).
 */
@Injectable()
export class TaskPinsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Notes that the pinned step failed chunk `idx` (its first failure is kept): milliseconds since then; null once not ours. */
  async failed(id: string, workerId: string, idx: number): Promise<number | null> {
    const [row] = await this.dataSource.query<Array<{ waited_ms: number }>>(
      `WITH o AS (${OWNED}),
       u AS (UPDATE speech_tasks t SET pin_waits = jsonb_build_object(($3::int)::text, now()) || t.pin_waits
             FROM o WHERE t.id = o.id RETURNING t.pin_waits)
       SELECT (extract(epoch FROM now() - (pin_waits ->> ($3::int)::text)::timestamptz) * 1000)::float8 AS waited_ms FROM u`,
      [id, workerId, idx],
    );
    return row ? row.waited_ms : null;
  }

  /**
   * Moves the task to the step `to` from chunk `change.chunk` on, if it is still pinned to `from` (one lane switches,
   * the others see the new pin): the switch is listed, every wait (measured against the old step) ends, and the
   * chunks after it that the old step had spoken already are dropped, so the file changes voice once. Returns those
   * chunks (to be spoken again) and what each had added to the progress; null when the task is not ours or moved on.
   */
  switchPin(
    id: string,
    workerId: string,
    from: VoicePin,
    to: VoicePin,
    change: VoiceSwitch,
    progressOf: (idx: number) => number,
  ): Promise<number[] | null> {
    return this.dataSource.transaction(async (manager) => {
      const [owned] = await manager.query<Array<{ voice_pin: VoicePin | null }>>(OWNED, [id, workerId]);
      if (!owned?.voice_pin || !samePin(owned.voice_pin, from)) return null;
      const dropped = await manager.query<Array<{ idx: number }>>(
        `WITH d AS (DELETE FROM speech_task_chunks WHERE task_id = $1 AND idx > $2 AND provider = $3 AND fallback_level = $4
                    RETURNING idx)
         SELECT idx FROM d`,
        [id, change.chunk, from.provider, from.level],
      );
      const redo = dropped.map((r) => r.idx).sort((a, b) => a - b);
      const progress = redo.reduce((sum, idx) => sum + progressOf(idx), 0);
      await manager.query(
        `WITH u AS (UPDATE speech_tasks SET voice_pin = $2, pin_waits = '{}'::jsonb, voice_switches = voice_switches || $3::jsonb,
           chunks_done = chunks_done - $4, characters_done = GREATEST(0, characters_done - $5), heartbeat_at = now()
         WHERE id = $1 RETURNING id)
         SELECT id FROM u`,
        [id, JSON.stringify(to), JSON.stringify([change]), redo.length, progress],
      );
      return redo;
    });
  }
}
