import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { newId } from '../common/ids';
import { maintenanceQuery } from '../database/maintenance-query';
import { pgPoolOf } from '../database/pg-pool';
import { deliveryBody, SourceEvent } from './payload';
import { isUnstorableText, storableText } from './storable-text';
import { DeliveryStatus, WebhookAttemptEntity } from './webhook-delivery.entity';
import { rowsOf, type AttemptRecord, type ClaimedDelivery, type EventRow, type TargetRow } from './delivery-rows';

export type { AttemptRecord, ClaimedDelivery } from './delivery-rows';

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
   * Fans out up to `limit` new events in one transaction: their deliveries and the moved cursor commit
   * together (the deliveries table is the queue the lanes claim from). The state row's lock is the claim: null when another replica holds it.
   *
   * Events are read in (txid, id) order after the cursor and only below the oldest transaction still
   * in progress: an event of a transaction that has not committed yet can only appear above that
   * bound, so moving the cursor never skips one, however long its transaction ran. Each statement
   * is an index range scan from the cursor, whatever the event rate.
   */
  fanOutBatch(limit: number): Promise<number | null> {
    return this.dataSource.transaction(async (m) => {
      const claimed: Array<{ cursor_txid: string; cursor_id: string }> = await m.query(
        `SELECT cursor_txid, cursor_id FROM webhook_fanout_state WHERE id = 1 FOR UPDATE SKIP LOCKED`,
      );
      if (claimed.length === 0) return null;
      const events: EventRow[] = await m.query(
        `SELECT e.id, e.type, e.key_id, e.provider, e.data, e.created_at, e.txid, e.traceparent FROM gateway_events e
          WHERE (e.txid, e.id) > ($1::bigint, $2::text)
            AND e.txid < txid_snapshot_xmin(txid_current_snapshot())
          ORDER BY e.txid, e.id LIMIT $3`,
        [claimed[0].cursor_txid, claimed[0].cursor_id, limit],
      );
      if (events.length === 0) return 0;
      const rows: Array<[string, string, string, string, string, string | null]> = [];
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
            e.traceparent,
          ]);
        }
      }
      if (rows.length > 0) {
        const column = (i: number): Array<string | null> => rows.map((r) => r[i]);
        await m.query(
          `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event, payload, status, traceparent)
           SELECT t.id, t.endpoint_id, t.event_id, t.event, t.payload, 'pending', t.traceparent
             FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
               AS t(id, endpoint_id, event_id, event, payload, traceparent)
           ON CONFLICT (endpoint_id, event_id) DO NOTHING`,
          [column(0), column(1), column(2), column(3), column(4), column(5)],
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

  /**
   * Claims up to `limit` due deliveries for this replica's free lanes in one statement, in turns across keys
   * (decisions §11). Each due delivery gets a turn within its key: endpoints take turns first (an endpoint's
   * n-th delivery comes after every endpoint's (n-1)-th), and the turn counts on from the deliveries the
   * key already has in this replica's lanes (`busy`). The lowest turns go first, oldest first on a tie, and
   * no key goes past `share` lanes, so one key's backlog cannot hold all of them. An endpoint that is
   * backed off is skipped; one whose last attempt timed out gets one attempt at a time (a probe).
   *
   * The lease is the claim: rows are locked with SKIP LOCKED, marked with `claim` and `locked_until` (past
   * any attempt, so only a dead worker's lease expires), and another replica ranking the same rows skips them.
   */
  async claimDue(
    limit: number,
    claim: string,
    lockSeconds: number,
    busy: ReadonlyMap<string, number>,
    share: number,
  ): Promise<ClaimedDelivery[]> {
    if (limit <= 0) return [];
    const rows: Array<
      Omit<ClaimedDelivery, 'endpointId' | 'eventId' | 'keyId'> & {
        endpoint_id: string;
        event_id: string;
        key_id: string;
      }
    > = rowsOf(
      await this.dataSource.query(
        `WITH busy AS (
           SELECT * FROM unnest($4::text[], $5::int[]) AS b(key_id, n)),
         due AS (
           SELECT d.id, d.endpoint_id, w.key_id, d.next_attempt_at, w.consecutive_timeouts,
                  row_number() OVER (PARTITION BY d.endpoint_id ORDER BY d.next_attempt_at, d.id) AS endpoint_turn
             FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
            WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND (d.locked_until IS NULL OR d.locked_until < now())
              AND (w.backoff_until IS NULL OR w.backoff_until <= now())),
         eligible AS (
           SELECT * FROM due
            WHERE due.consecutive_timeouts = 0
               OR (due.endpoint_turn = 1 AND NOT EXISTS (
                    SELECT 1 FROM webhook_deliveries l
                     WHERE l.endpoint_id = due.endpoint_id AND l.status = 'pending' AND l.locked_until >= now()))),
         ranked AS (
           SELECT e.id, e.next_attempt_at,
                  COALESCE(b.n, 0) + row_number() OVER (PARTITION BY e.key_id ORDER BY e.endpoint_turn, e.next_attempt_at, e.id) AS turn
             FROM eligible e LEFT JOIN busy b ON b.key_id = e.key_id),
         picked AS (
           SELECT id FROM ranked WHERE turn <= $6 ORDER BY turn, next_attempt_at, id LIMIT $1),
         locked AS (
           SELECT d.id FROM webhook_deliveries d JOIN picked p ON p.id = d.id
            WHERE d.status = 'pending' AND (d.locked_until IS NULL OR d.locked_until < now())
            FOR UPDATE OF d SKIP LOCKED)
         UPDATE webhook_deliveries d SET locked_until = now() + make_interval(secs => $2), claim = $3, updated_at = now()
           FROM locked, webhook_endpoints w
          WHERE d.id = locked.id AND w.id = d.endpoint_id
          RETURNING d.id, d.endpoint_id, w.key_id, d.event_id, d.event, d.payload, d.attempts, w.url, w.secret, w.enabled,
                    d.traceparent`,
        [limit, lockSeconds, claim, [...busy.keys()], [...busy.values()], share],
      ),
    );
    return rows.map(({ endpoint_id: endpointId, event_id: eventId, key_id: keyId, ...rest }) => ({
      ...rest,
      endpointId,
      eventId,
      keyId,
    }));
  }

  /**
   * Counts an attempt towards its endpoint's backoff, inside the attempt's transaction: a timeout adds one to
   * the endpoint's timeouts in a row and, past the threshold, backs the endpoint off (visible to every
   * replica); any other outcome clears both. Returns the timeouts in a row (0 when cleared).
   */
  async noteEndpointOutcome(
    m: EntityManager,
    endpointId: string,
    timedOut: boolean,
    backoffSeconds: (timeouts: number) => number | null,
  ): Promise<number> {
    if (!timedOut) {
      // written only when there is something to clear: a healthy endpoint's attempts do not touch its row
      await m.query(
        `UPDATE webhook_endpoints SET consecutive_timeouts = 0, backoff_until = NULL WHERE id = $1 AND consecutive_timeouts <> 0`,
        [endpointId],
      );
      return 0;
    }
    const [row] = rowsOf<{ n: number }>(
      await m.query(
        `UPDATE webhook_endpoints SET consecutive_timeouts = consecutive_timeouts + 1 WHERE id = $1 RETURNING consecutive_timeouts AS n`,
        [endpointId],
      ),
    );
    if (!row) return 0;
    const wait = backoffSeconds(row.n);
    if (wait !== null)
      await m.query(`UPDATE webhook_endpoints SET backoff_until = now() + make_interval(secs => $2) WHERE id = $1`, [
        endpointId,
        wait,
      ]);
    return row.n;
  }

  /** Pending deliveries, due or not: the depth of the delivery queue for metrics. */
  async pendingCount(): Promise<number> {
    const [row] = await this.dataSource.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'pending'`,
    );
    return row?.n ?? 0;
  }

  /**
   * Records the attempt and the delivery's next state in one transaction, with `alsoWrite` (the
   * endpoint's backoff). False when the claim was lost (the attempt is then not recorded).
   */
  async recordAttempt(
    a: AttemptRecord,
    claim: string,
    status: DeliveryStatus,
    waitSeconds: number | null,
    alsoWrite: (m: EntityManager) => Promise<unknown>,
  ): Promise<boolean> {
    try {
      return await this.writeAttempt(a, claim, status, waitSeconds, alsoWrite);
    } catch (err) {
      // text PostgreSQL refuses must not roll back the delivery's new state: it would stay locked and be resent forever
      if (!isUnstorableText(err)) throw err;
      return this.writeAttempt(
        { ...a, error: a.error === null ? null : storableText(a.error), responseSnippet: null },
        claim,
        status,
        waitSeconds,
        alsoWrite,
      );
    }
  }

  private writeAttempt(
    a: AttemptRecord,
    claim: string,
    status: DeliveryStatus,
    waitSeconds: number | null,
    alsoWrite: (m: EntityManager) => Promise<unknown>,
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
      await alsoWrite(m);
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
