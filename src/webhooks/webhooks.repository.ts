import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import type { WebhookEventType } from './signature';
import { isUnstorableText, storableText } from './storable-text';
import { WebhookAttemptEntity, WebhookDeliveryEntity } from './webhook-delivery.entity';
import { WebhookEndpointEntity } from './webhook-endpoint.entity';

export type NewEndpoint = Pick<WebhookEndpointEntity, 'id' | 'keyId' | 'url' | 'events' | 'secret'>;
export type EndpointPatch = Partial<Pick<WebhookEndpointEntity, 'url' | 'events' | 'enabled'>>;
export type NewTestAttempt = Pick<
  WebhookAttemptEntity,
  'id' | 'endpointId' | 'eventId' | 'event' | 'statusCode' | 'latencyMs' | 'error' | 'responseSnippet'
> & {
  deliveryId: string;
  payload: string;
};

/** Endpoints of a key and the attempts made to them; every query is scoped to the owning key. */
@Injectable()
export class WebhooksRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(WebhookEndpointEntity) private readonly endpoints: Repository<WebhookEndpointEntity>,
    @InjectRepository(WebhookAttemptEntity) private readonly attempts: Repository<WebhookAttemptEntity>,
  ) {}

  /**
   * Inserts the endpoint unless its key already has `limit` (then null). A per-key transaction lock
   * makes concurrent creates count one after another, so they cannot all see room for one more.
   */
  insertWithinLimit(endpoint: NewEndpoint, limit: number): Promise<WebhookEndpointEntity | null> {
    return this.dataSource.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`webhook_endpoints:${endpoint.keyId}`]);
      if ((await m.countBy(WebhookEndpointEntity, { keyId: endpoint.keyId })) >= limit) return null;
      await m.insert(WebhookEndpointEntity, endpoint);
      return m.findOneByOrFail(WebhookEndpointEntity, { id: endpoint.id });
    });
  }

  findOwned(keyId: string, id: string): Promise<WebhookEndpointEntity | null> {
    return this.endpoints.findOneBy({ id, keyId });
  }

  /** The endpoint with its stored (possibly sealed) secret, which other reads never select. */
  findOwnedWithSecret(keyId: string, id: string): Promise<WebhookEndpointEntity | null> {
    return this.endpoints
      .createQueryBuilder('w')
      .addSelect('w.secret')
      .where('w.id = :id AND w.key_id = :keyId', { id, keyId })
      .getOne();
  }

  async update(keyId: string, id: string, patch: EndpointPatch): Promise<WebhookEndpointEntity | null> {
    if (Object.keys(patch).length > 0) {
      const result = await this.endpoints.update({ id, keyId }, patch);
      if (!result.affected) return null;
    }
    return this.findOwned(keyId, id);
  }

  /** Up to `limit` endpoints whose secret is stored unsealed (not starting with `sealedPrefix`). */
  unsealedSecrets(sealedPrefix: string, limit: number): Promise<Array<{ id: string; secret: string }>> {
    return this.dataSource.query(
      `SELECT id, secret FROM webhook_endpoints WHERE left(secret, length($1)) <> $1 ORDER BY id LIMIT $2`,
      [sealedPrefix, limit],
    );
  }

  /** Replaces a secret only if it is still `was` (another replica may have sealed it first). */
  async swapSecret(id: string, was: string, sealed: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(
      `UPDATE webhook_endpoints SET secret = $3 WHERE id = $1 AND secret = $2 RETURNING id`,
      [id, was, sealed],
    );
    return rows.length > 0;
  }

  async replaceSecret(keyId: string, id: string, secret: string): Promise<WebhookEndpointEntity | null> {
    const result = await this.endpoints.update({ id, keyId }, { secret });
    return result.affected ? this.findOwned(keyId, id) : null;
  }

  /** Deletes the endpoint, its deliveries and their attempts (foreign keys cascade). */
  async delete(keyId: string, id: string): Promise<boolean> {
    const result = await this.endpoints.delete({ id, keyId });
    return (result.affected ?? 0) > 0;
  }

  /** Newest first; the cursor row is compared in SQL so microseconds and ties (seq) are kept. */
  listPage(keyId: string, after: string | null, take: number): Promise<WebhookEndpointEntity[]> {
    const query = this.endpoints
      .createQueryBuilder('w')
      .where('w.key_id = :keyId', { keyId })
      .orderBy('w.created_at', 'DESC')
      .addOrderBy('w.seq', 'DESC')
      .take(take);
    if (after) {
      query.andWhere(
        '(w.created_at, w.seq) < (SELECT a.created_at, a.seq FROM webhook_endpoints a WHERE a.id = :after AND a.key_id = :keyId)',
        { after },
      );
    }
    return query.getMany();
  }

  findAttempt(endpointId: string, id: string): Promise<WebhookAttemptEntity | null> {
    return this.attempts.findOneBy({ id, endpointId });
  }

  /** Attempts to one endpoint, newest first. */
  listAttempts(endpointId: string, after: string | null, take: number): Promise<WebhookAttemptEntity[]> {
    const query = this.attempts
      .createQueryBuilder('t')
      .where('t.endpoint_id = :endpointId', { endpointId })
      .orderBy('t.created_at', 'DESC')
      .addOrderBy('t.seq', 'DESC')
      .take(take);
    if (after) {
      query.andWhere(
        '(t.created_at, t.seq) < (SELECT a.created_at, a.seq FROM webhook_delivery_attempts a WHERE a.id = :after AND a.endpoint_id = :endpointId)',
        { after },
      );
    }
    return query.getMany();
  }

  /** A test send is recorded like any delivery (one attempt, never retried), so it shows in the list. */
  async recordTest(t: NewTestAttempt, delivered: boolean, event: WebhookEventType): Promise<void> {
    try {
      await this.writeTest(t, delivered, event);
    } catch (err) {
      // text PostgreSQL refuses must not turn the receiver's answer into an error for the caller
      if (!isUnstorableText(err)) throw err;
      await this.writeTest(
        { ...t, error: t.error === null ? null : storableText(t.error), responseSnippet: null },
        delivered,
        event,
      );
    }
  }

  private async writeTest(t: NewTestAttempt, delivered: boolean, event: WebhookEventType): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      await manager.insert(WebhookDeliveryEntity, {
        id: t.deliveryId,
        endpointId: t.endpointId,
        eventId: t.eventId,
        event,
        payload: t.payload,
        status: delivered ? 'succeeded' : 'failed',
        attempts: 1,
      });
      await manager.insert(WebhookAttemptEntity, {
        id: t.id,
        deliveryId: t.deliveryId,
        endpointId: t.endpointId,
        eventId: t.eventId,
        event,
        attempt: 1,
        statusCode: t.statusCode,
        latencyMs: t.latencyMs,
        error: t.error,
        responseSnippet: t.responseSnippet,
      });
    });
  }
}
