import { DataSource } from 'typeorm';
import { parseGatewayConfig } from '../../src/config/gateway-config';
import type { GatewayConfig } from '../../src/config/gateway-config';
import { FakeAnthropic, FakeAnthropicOptions, startFakeAnthropic } from '../fakes/fake-anthropic';
import { FakeMiniMax, FakeMiniMaxOptions, startFakeMiniMax } from '../fakes/fake-minimax';
import { FakeOpenAi, FakeOpenAiOptions, startFakeOpenAi } from '../fakes/fake-openai';
import type { TestApp } from './app';

/** One provider of the test gateway and the fake upstream behind it. */
export interface PooledProvider {
  name: string;
  fake: FakeOpenAi;
}

/** An `anthropic` kind provider and its fake Messages API. */
export interface AnthropicProvider {
  name: string;
  fake: FakeAnthropic;
}

/** A `minimax` kind provider and its fake MiniMax API. */
export interface MiniMaxProvider {
  name: string;
  fake: FakeMiniMax;
}

export interface PoolExtras {
  /** One `<prefix>-<label>` openai provider per entry, its fake started with these options. */
  special?: Record<string, FakeOpenAiOptions>;
  /** One `<prefix>-<label>` anthropic provider per entry. */
  anthropic?: Record<string, FakeAnthropicOptions>;
  /** One `<prefix>-<label>` minimax provider per entry. */
  minimax?: Record<string, FakeMiniMaxOptions>;
}

const providerYaml = (name: string, kind: string, url: string): string =>
  `  - name: ${name}\n    kind: ${kind}\n    base_url: ${url}\n    api_key: x`;

/** One `<prefix>-<label>` provider per entry of `options`, by label, each fake started by `start`. */
async function startLabelled<O, F>(
  prefix: string,
  options: Record<string, O> | undefined,
  start: (name: string, options: O) => Promise<F>,
): Promise<Map<string, { name: string; fake: F }>> {
  return new Map(
    await Promise.all(
      Object.entries(options ?? {}).map(async ([label, own]) => {
        const name = `${prefix}-${label}`;
        return [label, { name, fake: await start(name, own) }] as const;
      }),
    ),
  );
}

/** The provider started for `label`, or an error naming the kind of extra. */
function labelled<P>(providers: Map<string, P>, label: string, what: string): P {
  const provider = providers.get(label);
  if (!provider) throw new Error(`no ${what} provider '${label}' in this pool`);
  return provider;
}

/**
 * Providers with their own fakes, declared once at boot and handed out a few per test, so no
 * test shares a circuit (circuits are per provider name, across keys and test files).
 */
export class ProviderPool {
  private next = 0;

  private constructor(
    private readonly entries: PooledProvider[],
    private readonly named: Map<string, PooledProvider>,
    private readonly anthropics: Map<string, AnthropicProvider>,
    private readonly minimaxes: Map<string, MiniMaxProvider>,
  ) {}

  /** `size` plain openai providers, plus the named extras. */
  static async start(prefix: string, size: number, extras: PoolExtras = {}): Promise<ProviderPool> {
    const start = (name: string, options: FakeOpenAiOptions = {}): Promise<FakeOpenAi> =>
      startFakeOpenAi({ name, ...options });
    const entries = await Promise.all(
      Array.from({ length: size }, async (_, i) => ({ name: `${prefix}-${i}`, fake: await start(`${prefix}-${i}`) })),
    );
    const named = await startLabelled(prefix, extras.special, start);
    const anthropics = await startLabelled(prefix, extras.anthropic, (name, options: FakeAnthropicOptions) =>
      startFakeAnthropic({ name, ...options }),
    );
    const minimaxes = await startLabelled(prefix, extras.minimax, (name, options: FakeMiniMaxOptions) =>
      startFakeMiniMax({ name, ...options }),
    );
    return new ProviderPool(entries, named, anthropics, minimaxes);
  }

  get gateway(): GatewayConfig {
    const yaml = [
      'providers:',
      ...[...this.entries, ...this.named.values()].map((p) => providerYaml(p.name, 'openai', p.fake.url)),
      ...[...this.anthropics.values()].map((p) => providerYaml(p.name, 'anthropic', p.fake.url)),
      ...[...this.minimaxes.values()].map((p) => providerYaml(p.name, 'minimax', p.fake.url)),
    ].join('\n');
    return parseGatewayConfig(yaml, 'failover test gateway');
  }

  /** `n` providers no earlier test used. */
  take(n: number): PooledProvider[] {
    if (this.next + n > this.entries.length)
      throw new Error(`provider pool of ${this.entries.length} exhausted: raise its size`);
    const taken = this.entries.slice(this.next, this.next + n);
    this.next += n;
    return taken;
  }

  /** The provider started for `special[label]`. */
  special(label: string): PooledProvider {
    return labelled(this.named, label, 'special');
  }

  /** The anthropic provider started for `anthropic[label]`. */
  anthropic(label: string): AnthropicProvider {
    return labelled(this.anthropics, label, 'anthropic');
  }

  /** The minimax provider started for `minimax[label]`. */
  minimax(label: string): MiniMaxProvider {
    return labelled(this.minimaxes, label, 'minimax');
  }

  async close(): Promise<void> {
    const fakes = [...this.entries, ...this.named.values(), ...this.anthropics.values(), ...this.minimaxes.values()];
    await Promise.all(fakes.map((p) => p.fake.close()));
  }
}

export const CHAT_PATH = '/v1/chat/completions';
export const MODELS_PATH = '/v1/models';

export const chatBody = (model: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  model,
  messages: [{ role: 'user', content: 'Say hello.' }],
  ...extra,
});

/** The models each chat call of the fake carried, in order. */
export const modelsSent = (fake: FakeOpenAi): Array<string | null> =>
  fake.requests.filter((r) => r.path === CHAT_PATH).map((r) => r.model);

/** The x-svc-fallback-alert of a served failover, exactly as decisions §4 words it. */
export const servedAlert = (
  exhausted: string,
  reason: string,
  active: string,
  level: number,
): Record<string, unknown> => ({
  message: `${exhausted} failed (${reason}); served by ${active} at level ${level}`,
  exhausted_provider: exhausted,
  active_provider: active,
  fallback_level: level,
});

export const REQUEST_ID = /^req_[0-9A-Za-z]+$/;

/** Who served an answer, as the x-svc-* headers say it (decisions §4). */
export interface ServedBy {
  /** `x-svc-provider-used`: a provider's name, or `none`. */
  provider: string;
  /** `x-svc-fallback-level`. */
  level: number;
  /** `x-svc-is-fallback`; by default true past level 0. */
  fallback?: boolean;
  /** The parsed `x-svc-fallback-alert` (an exact value, or an asymmetric matcher); null: the header is absent. */
  alert?: unknown;
}

/** The failover headers of one answer, and its request id. */
export function expectServedBy(res: { headers: Record<string, string> }, served: ServedBy): void {
  expect({
    provider: res.headers['x-svc-provider-used'],
    fallback: res.headers['x-svc-is-fallback'],
    level: res.headers['x-svc-fallback-level'],
  }).toEqual({
    provider: served.provider,
    fallback: String(served.fallback ?? served.level > 0),
    level: String(served.level),
  });
  expect(res.headers['x-svc-request-id']).toMatch(REQUEST_ID);
  if (served.alert === null) expect(res.headers['x-svc-fallback-alert']).toBeUndefined();
  else if (served.alert !== undefined) expect(JSON.parse(res.headers['x-svc-fallback-alert'])).toEqual(served.alert);
}

/** One server-sent event's `data`, parsed unless it is `[DONE]`. */
export type SseData = Record<string, unknown> | '[DONE]';

export function parseSse(text: string): SseData[] {
  return text
    .split(/\r?\n\r?\n/)
    .map((block) =>
      block
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n'),
    )
    .filter((data) => data.length > 0)
    .map((data) => (data === '[DONE]' ? '[DONE]' : (JSON.parse(data) as Record<string, unknown>)));
}

export interface StreamedChat {
  status: number;
  headers: Headers;
  /** Milliseconds from sending the request to its status and headers. */
  headersAfterMs: number;
  events: SseData[];
  text: string;
  /** The concatenated `delta.content` of the chunks. */
  content: string;
  totalMs: number;
}

/** A `stream: true` chat completion read to its end with fetch, as an SSE client would. */
export async function streamChat(t: TestApp, secret: string, body: Record<string, unknown>): Promise<StreamedChat> {
  const started = Date.now();
  const res = await fetch(`${t.url}${CHAT_PATH}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  const headersAfterMs = Date.now() - started;
  const text = await res.text();
  const isSse = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
  const events = isSse ? parseSse(text) : [];
  return {
    status: res.status,
    headers: res.headers,
    headersAfterMs,
    events,
    text,
    content: contentOf(events),
    totalMs: Date.now() - started,
  };
}

export function contentOf(events: SseData[]): string {
  return events
    .map((e) => {
      if (e === '[DONE]') return '';
      const choices = e.choices as Array<{ delta?: { content?: string } }> | undefined;
      return choices?.[0]?.delta?.content ?? '';
    })
    .join('');
}

/** Polls until `read` returns something `accept` likes; fails with the last value after `timeoutMs`. */
export async function eventually<T>(
  read: () => T | Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs: number,
  label = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`${label} not met within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await sleep(50);
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Per-minute usage caps count in UTC minute windows: start a cap test well inside one. */
export async function awayFromMinuteBoundary(marginMs = 5000): Promise<void> {
  const intoMinute = Date.now() % 60_000;
  if (intoMinute > 60_000 - marginMs) await sleep(60_000 - intoMinute + 50);
}

export interface GatewayEventRow {
  id: string;
  type: string;
  key_id: string | null;
  provider: string;
  data: Record<string, unknown>;
  created_at: Date;
}

export async function eventsWhere(t: TestApp, sql: string, params: unknown[]): Promise<GatewayEventRow[]> {
  return t.app
    .get(DataSource)
    .query(
      `SELECT id, type, key_id, provider, data, created_at FROM gateway_events WHERE ${sql} ORDER BY created_at`,
      params,
    );
}

/**
 * Events stored in the background (a failover's past the bounded wait of decisions §8, a recovery's always):
 * waits until `sql` matches at least one row, then `settleMs` more so that a second (wrong) row would show too.
 */
export async function storedEvents(
  t: TestApp,
  sql: string,
  params: unknown[],
  what: string,
  settleMs = 300,
): Promise<GatewayEventRow[]> {
  await eventually(
    () => eventsWhere(t, sql, params),
    (rows) => rows.length > 0,
    5000,
    what,
  );
  await sleep(settleMs);
  return eventsWhere(t, sql, params);
}

export interface HealthEntry {
  provider: string;
  status: string;
  consecutive_failures: number;
  cooldown_remaining_secs: number;
}

export interface Health {
  overall: string;
  providers: HealthEntry[];
}

export async function health(t: TestApp, secret: string): Promise<Health> {
  const res = await t.http.get('/v1/providers/health').set('Authorization', `Bearer ${secret}`);
  if (res.status !== 200) throw new Error(`health answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as Health;
}

export const entryOf = (h: Health, provider: string): HealthEntry | undefined =>
  h.providers.find((p) => p.provider === provider);
