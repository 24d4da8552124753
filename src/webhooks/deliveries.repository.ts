import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { newId } from '../common/ids';
import { maintenanceQuery } from '../database/maintenance-query';
import { pgPoolOf } from '../database/pg-pool';
import { deliveryBody, SourceEvent } from './payload';
import type { WebhookEventType } from './signature';
import { isUnstorableText, storableText } from './storable-text';
import { DeliveryStatus, WebhookAttemptEntity } from './webhook-delivery.entity';

/** Sends the jobs of new deliveries inside the fan-out transaction. */
export type EnqueueDeliveries = (manager: EntityManager, deliveryIds: string[]) => Promise<void>;

export interface ClaimedDelivery {
  id: string;
  endpointId: string;
  eventId: string;
  event: WebhookEventType;
  payload: string;
  attempts: number;
  url: string;
  secret: string;
  enabled: boolean;
}

export type ClaimOutcome =
  | { kind: 'claimed'; delivery: ClaimedDelivery }
  | { kind: 'early'; dueInSeconds: number }
  | { kind: 'nothing' };

export type AttemptRecord = Pick<
  WebhookAttemptEntity,
  | 'deliveryId'
  | 'endpointId'
  | 'eventId'
  | 'event'
  | 'attempt'
  | 'statusCode'
  | 'latencyMs'
  | 'error'
  | 'responseSnippet'
>;

interface EventRow {
  id: string;
  type: string;
  key_id: string | null;
  provider: string;
  data: Record<string, unknown>;
  created_at: Date;
  txid: string;
}

interface TargetRow {
  id: string;
  key_id: string;
  chain: Array<{ provider: string; model: string }> | null;
}

/** TypeORM answers UPDATE/DELETE with `[rows, count]` and everything else with the rows. */
const rowsOf = <T>(result: unknown): T[] =>
  Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number'
    ? (result[0] as T[])
    : (result as T[]);

/** The SQL of fan-out and of the delivery worker. */
@Injectable()
export class DeliveriesRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The single progress row exists even if someone removed it by hand (then only events from now on are fanned out). */
  async ensureFanoutState(): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO webhook_fanout_state (id, cursor_txid, cursor_id) VALUES (1, txid_current(), '') ON CONFLICT (id) DO NOTHING`,
    );
  }

  /**
   * Fans out up to `limit` new events in one transaction: their deliveries, their jobs and the moved
   * cursor commit together. The state row's lock is the claim: null when another replica holds it.
   *
   * Events are read in (txid, id) order after the cursor and only below the oldest transaction still
   * in progress: an event of a transaction that has not committed yet can only appear above that
   * bound, so moving the cursor never skips one, however long its transaction ran. Each statement
   * is an index range scan from the cursor, whatever the event rate.
   */
  fanOutBatch(limit: number, enqueue: EnqueueDeliveries): Promise<number | null> {
    return this.dataSource.transaction(async (m) => {
      const claimed: Array<{ cursor_txid: string; cursor_id: string }> = await m.query(
        `SELECT cursor_txid, cursor_id FROM webhook_fanout_state WHERE id = 1 FOR UPDATE SKIP LOCKED`,
      );
      if (claimed.length === 0) return null;
      const events: EventRow[] = await m.query(
        `SELECT e.id, e.type, e.key_id, e.provider, e.data, e.created_at, e.txid FROM gateway_events e
          WHERE (e.txid, e.id) > ($1::bigint, $2::text)
            AND e.txid < txid_snapshot_xmin(txid_current_snapshot())
          ORDER BY e.txid, e.id LIMIT $3`,
        [claimed[0].cursor_txid, claimed[0].cursor_id, limit],
      );
      if (events.length === 0) return 0;
      const rows: Array<[string, string, string, string, string]> = [];
      const targets = await this.targetsOf(m, events);
      for (const e of events) {
        if (e.type !== 'failover' && e.type !== 'provider_recovered') continue;
        const event: SourceEvent = {
          id: e.id,
          type: e.type,
          keyId: e.key_id,
          provider: e.provider,
          data: e.data,
          createdAt: e.created_at,
        };
        for (const target of targets(e)) {
          rows.push([
            newId('dlv'),
            target.id,
            e.id,
            e.type,
            deliveryBody(event, { id: target.key_id, chain: target.chain ?? [] }),
          ]);
        }
      }
      if (rows.length > 0) {
        const column = (i: number): string[] => rows.map((r) => r[i]);
        const inserted: Array<{ id: string }> = await m.query(
          `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event, payload, status)
           SELECT t.id, t.endpoint_id, t.event_id, t.event, t.payload, 'pending'
             FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS t(id, endpoint_id, event_id, event, payload)
           ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING id`,
          [column(0), column(1), column(2), column(3), column(4)],
        );
        await enqueue(
          m,
          inserted.map((r) => r.id),
        );
      }
      const last = events[events.length - 1];
      await m.query(`UPDATE webhook_fanout_state SET cursor_txid = $1, cursor_id = $2 WHERE id = 1`, [
        last.txid,
        last.id,
      ]);
      return events.length;
    });
  }

  /**
   * Enabled endpoints subscribed to each event: the failing key's, or those of every key whose chain
   * holds the recovered provider. One query for all the failover events of a batch, one per recovered provider.
   */
  private async targetsOf(m: EntityManager, events: EventRow[]): Promise<(e: EventRow) => TargetRow[]> {
    const keyIds = [...new Set(events.filter((e) => e.type === 'failover' && e.key_id).map((e) => e.key_id as string))];
    const byKey = new Map<string, TargetRow[]>();
    if (keyIds.length > 0) {
      const rows: TargetRow[] = await m.query(
        `SELECT w.id, w.key_id, NULL AS chain FROM webhook_endpoints w WHERE w.key_id = ANY($1::text[]) AND w.enabled AND 'failover' = ANY(w.events) ORDER BY w.seq`,
        [keyIds],
      );
      for (const row of rows) byKey.set(row.key_id, [...(byKey.get(row.key_id) ?? []), row]);
    }
    const byProvider = new Map<string, TargetRow[]>();
    for (const provider of new Set(events.filter((e) => e.type === 'provider_recovered').map((e) => e.provider))) {
      byProvider.set(
        provider,
        await m.query(
          `SELECT w.id, w.key_id, k.chain FROM webhook_endpoints w JOIN proxy_keys k ON k.id = w.key_id
            WHERE w.enabled AND 'provider_recovered' = ANY(w.events) AND k.chain @> jsonb_build_array(jsonb_build_object('provider', $1::text))
            ORDER BY w.seq`,
          [provider],
        ),
      );
    }
    return (e) =>
      e.type === 'failover' ? (e.key_id ? (byKey.get(e.key_id) ?? []) : []) : (byProvider.get(e.provider) ?? []);
  }

  /** Locks a due, pending delivery for one attempt; the lock outlives the send timeout, so only a dead worker's lock expires. */
  async claim(id: string, claim: string, lockSeconds: number): Promise<ClaimOutcome> {
    const rows: Array<Omit<ClaimedDelivery, 'endpointId' | 'eventId'> & { endpoint_id: string; event_id: string }> =
      await this.dataSource.query(
        `WITH c AS (
         UPDATE webhook_deliveries SET locked_until = now() + make_interval(secs => $3), claim = $2, updated_at = now()
          WHERE id = $1 AND status = 'pending' AND next_attempt_at <= now() + interval '1 second' AND (locked_until IS NULL OR locked_until < now())
          RETURNING id, endpoint_id, event_id, event, payload, attempts)
       SELECT c.id, c.endpoint_id, c.event_id, c.event, c.payload, c.attempts, w.url, w.secret, w.enabled
         FROM c JOIN webhook_endpoints w ON w.id = c.endpoint_id`,
        [id, claim, lockSeconds],
      );
    const row = rows[0];
    if (row) {
      const { endpoint_id: endpointId, event_id: eventId, ...rest } = row;
      return { kind: 'claimed', delivery: { ...rest, endpointId, eventId } };
    }
    const waiting: Array<{ due_in: number }> = await this.dataSource.query(
      `SELECT EXTRACT(EPOCH FROM next_attempt_at - now())::float8 AS due_in FROM webhook_deliveries
        WHERE id = $1 AND status = 'pending' AND next_attempt_at > now() + interval '1 second' AND (locked_until IS NULL OR locked_until < now())`,
      [id],
    );
    return waiting[0] ? { kind: 'early', dueInSeconds: Math.ceil(waiting[0].due_in) } : { kind: 'nothing' };
  }

  /**
   * Records the attempt and the delivery's next state in one transaction, with the next attempt's
   * job when there is one. False when the claim was lost (the attempt is then not recorded).
   */
  async recordAttempt(
    a: AttemptRecord,
    claim: string,
    status: DeliveryStatus,
    waitSeconds: number | null,
    enqueueNext: (m: EntityManager) => Promise<unknown>,
  ): Promise<boolean> {
    try {
      return await this.writeAttempt(a, claim, status, waitSeconds, enqueueNext);
    } catch (err) {
      // text PostgreSQL refuses must not roll back the delivery's new state: it would stay locked and be resent forever
      if (!isUnstorableText(err)) throw err;
      return this.writeAttempt(
        { ...a, error: a.error === null ? null : storableText(a.error), responseSnippet: null },
        claim,
        status,
        waitSeconds,
        enqueueNext,
      );
    }
  }

  private writeAttempt(
    a: AttemptRecord,
    claim: string,
    status: DeliveryStatus,
    waitSeconds: number | null,
    enqueueNext: (m: EntityManager) => Promise<unknown>,
  ): Promise<boolean> {
    return this.dataSource.transaction(async (m) => {
      const updated = rowsOf<{ id: string }>(
        await m.query(
          `UPDATE webhook_deliveries SET attempts = $3, status = $4, locked_until = NULL, claim = NULL, updated_at = now(),
             next_attempt_at = CASE WHEN $5::float8 IS NULL THEN next_attempt_at ELSE now() + make_interval(secs => $5::float8) END
            WHERE id = $1 AND claim = $2 RETURNING id`,
          [a.deliveryId, claim, a.attempt, status, waitSeconds],
        ),
      );
      if (updated.length === 0) return false;
      await m.insert(WebhookAttemptEntity, { id: newId('whd'), ...a });
      if (waitSeconds !== null) await enqueueNext(m);
      return true;
    });
  }

  /** Gives a claimed delivery back without an attempt (shutdown), so another worker can send it now. */
  async release(id: string, claim: string): Promise<void> {
    await this.dataSource.query(
      `UPDATE webhook_deliveries SET locked_until = NULL, claim = NULL WHERE id = $1 AND claim = $2`,
      [id, claim],
    );
  }

  /** Stops a delivery without an attempt: its endpoint was disabled while it waited. */
  async abandon(id: string, claim: string): Promise<void> {
    await this.dataSource.query(
      `UPDATE webhook_deliveries SET status = 'failed', locked_until = NULL, claim = NULL, updated_at = now() WHERE id = $1 AND claim = $2`,
      [id, claim],
    );
  }

  /** Pending deliveries long past due and not locked: their job was lost (e.g. it failed too often). */
  async stalled(limit: number, overdueSeconds: number): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.dataSource.query(
      `SELECT id FROM webhook_deliveries
        WHERE status = 'pending' AND next_attempt_at < now() - make_interval(secs => $2) AND (locked_until IS NULL OR locked_until < now())
        ORDER BY next_attempt_at LIMIT $1`,
      [limit, overdueSeconds],
    );
    return rows.map((r) => r.id);
  }

  /** Deletes up to `batch` events past `retentionSeconds` that the fan-out has passed (its own, longer deadline). */
  async deleteExpiredEvents(retentionSeconds: number, batch: number): Promise<number> {
    const { rowCount } = await maintenanceQuery(
      pgPoolOf(this.dataSource),
      `DELETE FROM gateway_events WHERE id IN (
         SELECT e.id FROM gateway_events e, webhook_fanout_state s
          WHERE s.id = 1 AND e.created_at < now() - make_interval(secs => $1) AND (e.txid, e.id) <= (s.cursor_txid, s.cursor_id)
          LIMIT ${Math.floor(batch)})`,
      [retentionSeconds],
    );
    return rowCount ?? 0;
  }
}
