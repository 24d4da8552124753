import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DomainError, notFound } from '../common/errors/domain-error';
import { newId, randomBase62 } from '../common/ids';
import { Page, toPage } from '../common/http/pagination.dto';
import { EnvironmentVariables } from '../config/env.schema';
import type { AuthenticatedKey } from '../keys/key-directory';
import type { WebhookDeliveryDto } from './dto/webhook-delivery.dto';
import {
  CreateWebhookEndpointDto,
  UpdateWebhookEndpointDto,
  WebhookEndpointDeletedDto,
  WebhookEndpointDto,
  WebhookEndpointWithSecretDto,
  WebhookTestResultDto,
} from './dto/webhook-endpoint.dto';
import { deliveryBody } from './payload';
import { SecretBox } from './secret-box';
import type { WebhookEventType } from './signature';
import { WebhookAttemptEntity } from './webhook-delivery.entity';
import { WebhookEndpointEntity } from './webhook-endpoint.entity';
import { AttemptResult, WebhookSender } from './webhook-sender';
import { DESTINATION_NOT_ALLOWED, literalHostBlocked, portAllowed } from './webhook-url';
import { WebhooksRepository } from './webhooks.repository';

/** Endpoints one key may have: each event is delivered to each of them. */
export const MAX_ENDPOINTS_PER_KEY = 20;

const unixSeconds = (date: Date): number => Math.floor(date.getTime() / 1000);

const toDto = (row: WebhookEndpointEntity): WebhookEndpointDto => ({
  id: row.id,
  object: 'webhook_endpoint',
  url: row.url,
  events: row.events,
  enabled: row.enabled,
  created_at: unixSeconds(row.createdAt),
});

const toDeliveryDto = (row: WebhookAttemptEntity): WebhookDeliveryDto => ({
  id: row.id,
  object: 'webhook_delivery',
  event_id: row.eventId,
  event: row.event,
  attempt: row.attempt,
  status_code: row.statusCode,
  latency_ms: row.latencyMs,
  error: row.error,
  created_at: unixSeconds(row.createdAt),
});

const endpointNotFound = (id: string): DomainError => notFound('webhook endpoint', id, 'webhook_id');

/** `whsec_` + 32 base62 characters (about 190 random bits). */
const newSecret = (): string => `whsec_${randomBase62(32)}`;

/** Webhook endpoints of one key: their URLs, subscriptions and secrets, a test send and the attempt log. */
@Injectable()
export class WebhooksService {
  private readonly allowPrivate: boolean;
  /** Test sends per key in the current UTC minute (this replica): `/test` reaches any URL on demand, so it is metered. */
  private readonly testSends = new Map<string, { minute: number; count: number }>();
  private readonly testsPerMinute: number;

  constructor(
    private readonly repository: WebhooksRepository,
    private readonly secrets: SecretBox,
    private readonly sender: WebhookSender,
    env: EnvironmentVariables,
  ) {
    this.allowPrivate = env.SVC_WEBHOOK_ALLOW_PRIVATE;
    this.testsPerMinute = env.SVC_WEBHOOK_TESTS_PER_MINUTE;
  }

  async create(keyId: string, body: CreateWebhookEndpointDto): Promise<WebhookEndpointWithSecretDto> {
    this.checkDestination(body.url);
    const id = newId('we');
    const secret = newSecret();
    const row = await this.repository.insertWithinLimit(
      { id, keyId, url: body.url, events: body.events ?? ['failover'], secret: this.secrets.seal(secret, id) },
      MAX_ENDPOINTS_PER_KEY,
    );
    if (!row)
      throw new DomainError(
        'webhook_limit_reached',
        `A key can have at most ${MAX_ENDPOINTS_PER_KEY} webhook endpoints; delete one first.`,
      );
    return { ...toDto(row), secret };
  }

  async get(keyId: string, id: string): Promise<WebhookEndpointDto> {
    const row = await this.repository.findOwned(keyId, id);
    if (!row) throw endpointNotFound(id);
    return toDto(row);
  }

  async list(keyId: string, after: string | undefined, limit: number): Promise<Page<WebhookEndpointDto>> {
    if (after && !(await this.repository.findOwned(keyId, after))) {
      throw new DomainError(
        'invalid_cursor',
        `'after' must be the id of one of your webhook endpoints; '${after}' is not.`,
        { param: 'after' },
      );
    }
    const rows = await this.repository.listPage(keyId, after ?? null, limit + 1);
    return toPage(rows.map(toDto), limit);
  }

  async update(keyId: string, id: string, body: UpdateWebhookEndpointDto): Promise<WebhookEndpointDto> {
    if (body.url !== undefined) this.checkDestination(body.url);
    const patch = {
      ...(body.url !== undefined && { url: body.url }),
      ...(body.events && { events: body.events }),
      ...(body.enabled !== undefined && { enabled: body.enabled }),
    };
    const row = await this.repository.update(keyId, id, patch);
    if (!row) throw endpointNotFound(id);
    return toDto(row);
  }

  /** Deletes the endpoint with its pending deliveries and its attempt log. */
  async delete(keyId: string, id: string): Promise<WebhookEndpointDeletedDto> {
    if (!(await this.repository.delete(keyId, id))) throw endpointNotFound(id);
    return { id, object: 'webhook_endpoint', deleted: true };
  }

  /** A new secret at once: every later attempt, retries of earlier events included, is signed with it. */
  async rotateSecret(keyId: string, id: string): Promise<WebhookEndpointWithSecretDto> {
    const secret = newSecret();
    const row = await this.repository.replaceSecret(keyId, id, this.secrets.seal(secret, id));
    if (!row) throw endpointNotFound(id);
    return { ...toDto(row), secret };
  }

  /** Sends a signed sample of the endpoint's first event type now, records it, and reports how it went. */
  async test(key: AuthenticatedKey, id: string): Promise<WebhookTestResultDto> {
    const endpoint = await this.repository.findOwnedWithSecret(key.id, id);
    if (!endpoint) throw endpointNotFound(id);
    this.meterTestSend(key.id, Date.now());
    const event = endpoint.events[0] ?? 'failover';
    const eventId = `evt_${randomUUID()}`;
    const payload = sampleBody(eventId, event, key);
    let result: AttemptResult;
    try {
      result = await this.sender.send(endpoint.url, event, this.secrets.open(endpoint.secret, endpoint.id), payload);
    } catch (err) {
      result = { delivered: false, statusCode: null, latencyMs: 0, error: (err as Error).message, snippet: null };
    }
    await this.repository.recordTest(
      {
        id: newId('whd'),
        deliveryId: newId('dlv'),
        endpointId: endpoint.id,
        eventId,
        event,
        payload,
        statusCode: result.statusCode,
        latencyMs: result.latencyMs,
        error: result.error,
        responseSnippet: result.snippet,
      },
      result.delivered,
      event,
    );
    return {
      delivered: result.delivered,
      status_code: result.statusCode,
      latency_ms: result.latencyMs,
      error: result.error,
    };
  }

  /** Attempts to one endpoint, newest first. */
  async deliveries(
    keyId: string,
    id: string,
    after: string | undefined,
    limit: number,
  ): Promise<Page<WebhookDeliveryDto>> {
    if (!(await this.repository.findOwned(keyId, id))) throw endpointNotFound(id);
    if (after && !(await this.repository.findAttempt(id, after))) {
      throw new DomainError(
        'invalid_cursor',
        `'after' must be the id of a delivery of this endpoint; '${after}' is not.`,
        { param: 'after' },
      );
    }
    const rows = await this.repository.listAttempts(id, after ?? null, limit + 1);
    return toPage(rows.map(toDeliveryDto), limit);
  }

  /** At most SVC_WEBHOOK_TESTS_PER_MINUTE test sends per key and UTC minute on this replica; more → 429 with Retry-After. */
  private meterTestSend(keyId: string, now: number): void {
    const minute = Math.floor(now / 60_000);
    const entry = this.testSends.get(keyId);
    if (!entry || entry.minute !== minute) {
      if (this.testSends.size > 10_000) this.testSends.clear(); // stale minutes of other keys: cheap to forget
      this.testSends.set(keyId, { minute, count: 1 });
      return;
    }
    if (entry.count >= this.testsPerMinute) {
      const retryAfter = Math.max(1, Math.ceil(((minute + 1) * 60_000 - now) / 1000));
      throw new DomainError(
        'rate_limited',
        `At most ${this.testsPerMinute} webhook test sends per minute per key; retry in ${retryAfter} s.`,
        {
          headers: { 'Retry-After': String(retryAfter) },
        },
      );
    }
    entry.count += 1;
  }

  /** A literal private address or a port outside 80, 443 and 1024+ is refused now; a hostname is checked each time it is resolved. */
  private checkDestination(url: string): void {
    if (this.allowPrivate) return;
    if (literalHostBlocked(url) || !portAllowed(url)) {
      throw new DomainError('webhook_url_not_allowed', `url ${DESTINATION_NOT_ALLOWED}.`, { param: 'url' });
    }
  }
}

/** A sample event shaped like a real one from the key's own chain; its `request_id` starts with `req_test`. */
export function sampleBody(eventId: string, event: WebhookEventType, key: AuthenticatedKey): string {
  const [first, second] = key.chain;
  const provider = first?.provider ?? 'sample-provider';
  const data =
    event === 'failover'
      ? {
          model: first?.model ?? 'sample-model',
          exhausted_provider: provider,
          active_provider: second?.provider ?? provider,
          fallback_level: 1,
          latency_ms: 0,
        }
      : { exhausted_provider: null, active_provider: provider, fallback_level: null, latency_ms: 0 };
  const source = {
    id: eventId,
    type: event,
    keyId: key.id,
    provider,
    createdAt: new Date(),
    data: { ...data, request_id: `req_test${randomBase62(16)}` },
  };
  return deliveryBody(source, { id: key.id, chain: key.chain });
}
