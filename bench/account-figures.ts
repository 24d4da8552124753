import { FakeUpstream, sendJson } from '../test/fakes/fake-upstream';
import { pairedRequests, IN_RUNS } from './paired';
import type { TargetRow } from './results-file';

/**
 * The accounts half of `bench:speech-continuation` (decisions §7): an OpenAI-compatible upstream that tells the
 * accounts apart by their keys, how many of a burst a provider with two accounts of max_concurrency 3 serves at
 * level 0, and what choosing an account adds to a request (paired against the same provider without accounts).
 */

export const ACCOUNT_KEYS = { a: 'sk-bench-account-a', b: 'sk-bench-account-b' };
export const HOLD_MS = 200;

/** Answers every chat call after `holdMs`; counts the calls in flight per account key, and the most at once. */
export class AccountsUpstream {
  readonly mostInFlight = new Map<string, number>();
  private readonly inFlight = new Map<string, number>();
  readonly fake: FakeUpstream<'ok'>;

  constructor(readonly holdMs: number) {
    this.fake = new FakeUpstream<'ok'>('ok', async (x) => {
      if (x.record.method === 'GET') return sendJson(x.res, 200, { object: 'list', data: [] });
      const key = (x.req.headers.authorization ?? '').replace(/^Bearer /, '');
      const now = (this.inFlight.get(key) ?? 0) + 1;
      this.inFlight.set(key, now);
      this.mostInFlight.set(key, Math.max(now, this.mostInFlight.get(key) ?? 0));
      try {
        if (this.holdMs > 0 && !(await x.wait(this.holdMs))) return;
        sendJson(x.res, 200, {
          id: 'chatcmpl-bench',
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: x.record.model,
          choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
        });
      } finally {
        this.inFlight.set(key, (this.inFlight.get(key) ?? 1) - 1);
      }
    });
  }

  async listen(): Promise<string> {
    await this.fake.listen('/v1');
    return this.fake.url;
  }
}

/** The gateway YAML lines of an openai-kind provider, with the two accounts or with one key. */
export function accountsProvider(name: string, url: string, accounts: boolean, queueTimeoutMs: number): string[] {
  if (!accounts) return [`  - { name: ${name}, kind: openai, base_url: "${url}", api_key: sk-bench-plain }`];
  return [
    `  - name: ${name}`,
    '    kind: openai',
    `    base_url: "${url}"`,
    `    queue_timeout_ms: ${queueTimeoutMs}`,
    '    accounts:',
    ...Object.entries(ACCOUNT_KEYS).map(
      ([account, key]) => `      - { name: ${account}, api_key: ${key}, max_concurrency: 3 }`,
    ),
  ];
}

const CHAT_BODY = JSON.stringify({ model: 'bench-model', messages: [{ role: 'user', content: 'hi' }] });

/** `burst` concurrent calls on a [accounts, spare] key, `rounds` times: the fallback level of each answer. */
export async function burstLevels(url: string, secret: string, burst: number, rounds: number): Promise<number[][]> {
  const levels: number[][] = [];
  for (let r = 0; r < rounds; r++)
    levels.push(
      await Promise.all(
        Array.from({ length: burst }, async () => {
          const res = await fetch(`${url}/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
            body: CHAT_BODY,
          });
          await res.arrayBuffer();
          return res.status === 200 ? Number(res.headers.get('x-svc-fallback-level')) : -1;
        }),
      ),
    );
  return levels;
}

/** The rows of the accounts figures. */
export async function accountRows(
  url: string,
  keys: { burst: string; pooled: string; plain: string },
  upstream: AccountsUpstream,
  options: { burst: number; rounds: number; seconds: number },
): Promise<TargetRow[]> {
  const levels = await burstLevels(url, keys.burst, options.burst, options.rounds);
  const atZero = levels.map((round) => round.filter((level) => level === 0).length);
  const failed = levels.flat().filter((level) => level < 0).length;
  const most = Math.max(...Object.values(ACCOUNT_KEYS).map((key) => upstream.mostInFlight.get(key) ?? 0));
  const paired = await pairedRequests(
    (['pooled', 'plain'] as const).map((name) => ({
      name,
      url: `${url}/v1/chat/completions`,
      headers: { authorization: `Bearer ${keys[name]}` },
      body: CHAT_BODY,
      expectProvider: name,
    })),
    options.seconds,
    IN_RUNS,
  );
  const added = paired.all.pooled.p50 - paired.all.plain.p50;
  const spread = paired.blocks.map((block) => block.pooled.p50 - block.plain.p50).sort((a, b) => a - b);
  return [
    {
      figure: `${options.burst} concurrent calls, 2 accounts × max_concurrency 3, ${HOLD_MS} ms answers: served at level 0`,
      value: `${atZero.join(', ')} of ${options.burst} (${options.rounds} bursts; most in flight on one account ${most}; failed ${failed})`,
      target: '6 each burst, ≤ 3 on an account',
      pass: atZero.every((n) => n === 6) && most <= 3 && failed === 0,
    },
    {
      figure: 'added latency of choosing an account (p50 with accounts − without, paired, c=1)',
      value: `${(added * 1000).toFixed(0)} µs (${paired.all.pooled.p50.toFixed(3)} − ${paired.all.plain.p50.toFixed(3)} ms; blocks ${spread.length ? `${(spread[0] * 1000).toFixed(0)}…${(spread[spread.length - 1] * 1000).toFixed(0)} µs` : 'n/a'}; ${paired.all.pooled.count} pairs, faults ${paired.faults})`,
      target: '≤ 0.1 ms',
      pass: added <= 0.1 && paired.faults === 0,
    },
  ];
}
