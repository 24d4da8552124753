import { Capability } from '../config/provider-kinds';
import { ChainStepDto } from '../config/chain-step.dto';
import { alertMessage, classify, LOCAL_QUEUE_REASON, planRoute, ProviderFacts } from './chain';
import type { UpstreamOutcome } from '../providers/provider-adapter';

const providers: Record<string, ProviderFacts> = {
  openai: { capabilities: ['chat', 'speech'], timeoutMs: null },
  anthropic: { capabilities: ['chat'], timeoutMs: 20000 },
  minimax: { capabilities: ['speech'], timeoutMs: null },
  echo: { capabilities: ['chat'], timeoutMs: null },
};
const providerOf = (name: string): ProviderFacts | undefined => providers[name];

const step = (provider: string, model: string, extra: Partial<ChainStepDto> = {}): ChainStepDto => ({
  provider,
  model,
  ...extra,
});

const route = (chain: ChainStepDto[], model: string, capability: Capability = 'chat') =>
  planRoute(chain, model, capability, providerOf)?.map((s) => `${s.level}:${s.chainIndex}:${s.provider}/${s.model}`) ??
  null;

describe('planRoute', () => {
  it('starts at the first step serving the requested model and keeps the later steps in order', () => {
    const chain = [step('openai', 'gpt-4o'), step('anthropic', 'claude-3-5-haiku'), step('echo', 'echo-1')];
    expect(route(chain, 'gpt-4o')).toEqual(['0:0:openai/gpt-4o', '1:1:anthropic/claude-3-5-haiku', '2:2:echo/echo-1']);
  });

  it('sends each fallback step its own model', () => {
    const plan = planRoute(
      [step('openai', 'gpt-4o'), step('anthropic', 'claude-3-5-haiku')],
      'gpt-4o',
      'chat',
      providerOf,
    );
    expect(plan?.map((s) => s.model)).toEqual(['gpt-4o', 'claude-3-5-haiku']);
  });

  it('skips steps before the entry step', () => {
    const chain = [step('openai', 'gpt-4o'), step('anthropic', 'claude-3-5-haiku'), step('echo', 'echo-1')];
    expect(route(chain, 'claude-3-5-haiku')).toEqual(['0:1:anthropic/claude-3-5-haiku', '1:2:echo/echo-1']);
  });

  it('finds an entry at the last chain position and plans no fallback after it', () => {
    const chain = [step('openai', 'gpt-4o'), step('echo', 'echo-1')];
    expect(route(chain, 'echo-1')).toEqual(['0:1:echo/echo-1']);
  });

  it('uses the first of several steps serving the requested model as the entry', () => {
    const chain = [step('anthropic', 'shared'), step('echo', 'shared')];
    expect(route(chain, 'shared')).toEqual(['0:0:anthropic/shared', '1:1:echo/shared']);
  });

  it('skips a provider without the capability, as entry and as fallback', () => {
    const chain = [
      step('minimax', 'speech-02-hd'),
      step('anthropic', 'claude'),
      step('minimax', 'm2'),
      step('openai', 'tts-1'),
    ];
    expect(route(chain, 'speech-02-hd', 'chat')).toBeNull();
    expect(route(chain, 'speech-02-hd', 'speech')).toEqual([
      '0:0:minimax/speech-02-hd',
      '1:2:minimax/m2',
      '2:3:openai/tts-1',
    ]);
  });

  it('does not take a step of the requested model as entry when its provider lacks the capability', () => {
    const chain = [step('minimax', 'gpt-4o'), step('openai', 'gpt-4o')];
    expect(route(chain, 'gpt-4o', 'chat')).toEqual(['0:1:openai/gpt-4o']);
  });

  it('skips an unknown provider, as entry and as fallback', () => {
    const chain = [step('ghost', 'gpt-4o'), step('openai', 'gpt-4o'), step('gone', 'x'), step('echo', 'echo-1')];
    expect(route(chain, 'gpt-4o')).toEqual(['0:1:openai/gpt-4o', '1:3:echo/echo-1']);
  });

  it('numbers fallback levels by planned position, not chain position', () => {
    const chain = [step('openai', 'gpt-4o'), step('minimax', 'speech-02-hd'), step('echo', 'echo-1')];
    const plan = planRoute(chain, 'gpt-4o', 'chat', providerOf);
    expect(plan?.map((s) => [s.level, s.chainIndex])).toEqual([
      [0, 0],
      [1, 2],
    ]);
  });

  it('returns null when no step serves the requested model', () => {
    expect(route([step('openai', 'gpt-4o')], 'gpt-5')).toBeNull();
    expect(route([], 'gpt-4o')).toBeNull();
  });

  it('matches the model exactly, case included', () => {
    expect(route([step('openai', 'gpt-4o')], 'GPT-4o')).toBeNull();
    expect(route([step('openai', 'gpt-4o')], 'gpt-4o ')).toBeNull();
  });

  it('prefers the step timeout over the provider timeout over the default', () => {
    const chain = [
      step('anthropic', 'claude', { timeout_ms: 5000 }),
      step('anthropic', 'claude-2'),
      step('openai', 'gpt-4o'),
    ];
    const plan = planRoute(chain, 'claude', 'chat', providerOf, 12345);
    expect(plan?.map((s) => s.timeoutMs)).toEqual([5000, 20000, 12345]);
  });

  it("takes each conduct setting from the step, else the provider, else the one table's default", () => {
    const facts = (name: string): ProviderFacts | undefined =>
      name === 'tuned'
        ? { capabilities: ['chat'], timeoutMs: null, firstTokenTimeoutMs: 4000, retries: 3, retryAfterMaxMs: 1000 }
        : providerOf(name);
    const chain = [
      step('tuned', 'm', { first_token_timeout_ms: 1500, retries: 0, stream_idle_timeout_ms: 700 }),
      step('tuned', 'm2'),
      step('openai', 'gpt-4o'),
    ];
    const plan = planRoute(chain, 'm', 'chat', facts);
    expect(
      plan?.map((s) => [
        s.firstTokenTimeoutMs,
        s.providerFirstTokenTimeoutMs,
        s.streamIdleTimeoutMs,
        s.retries,
        s.retryAfterMaxMs,
      ]),
    ).toEqual([
      [1500, 4000, 700, 0, 1000],
      [4000, 4000, 20000, 3, 1000],
      [10000, 10000, 20000, 1, 5000],
    ]);
  });

  it('defaults the timeout to 30 seconds', () => {
    expect(planRoute([step('openai', 'gpt-4o')], 'gpt-4o', 'chat', providerOf)?.[0].timeoutMs).toBe(30000);
  });

  it("keeps the provider's own timeout beside a step's override (the breaker judges by the provider's)", () => {
    const chain = [
      step('anthropic', 'claude', { timeout_ms: 300 }),
      step('openai', 'gpt-4o', { timeout_ms: 60000 }),
      step('echo', 'echo-1'),
    ];
    const plan = planRoute(chain, 'claude', 'chat', providerOf, 12345);
    expect(plan?.map((s) => [s.timeoutMs, s.providerTimeoutMs])).toEqual([
      [300, 20000],
      [60000, 12345],
      [12345, 12345],
    ]);
  });

  it('carries the original step so callers can read its usage cap and voice map', () => {
    const original = step('openai', 'tts-1', {
      usage_cap: { requests: 10, per: 'minute' },
      voice_map: { '*': 'alloy' },
    });
    expect(planRoute([original], 'tts-1', 'speech', providerOf)?.[0].step).toBe(original);
  });
});

describe('classify', () => {
  const http = (status: number): UpstreamOutcome => ({ kind: 'http', status, message: 'upstream says no' });

  it('treats ok as success without a breaker failure', () => {
    expect(classify({ kind: 'ok' })).toEqual({ verdict: 'success', breakerFailure: false, reason: 'ok' });
  });

  it.each([400, 404, 413, 415, 422])(
    'relays HTTP %i as a client error without failing over or counting a failure',
    (status) => {
      expect(classify(http(status))).toEqual({
        verdict: 'client_error',
        breakerFailure: false,
        reason: `HTTP ${status}`,
      });
    },
  );

  it.each<[string, UpstreamOutcome, string]>([
    [
      'an OpenAI context_length_exceeded',
      { kind: 'http', status: 400, message: 'too long', error: { code: 'context_length_exceeded' } },
      'context_length',
    ],
    [
      'an OpenAI string_above_max_length',
      { kind: 'http', status: 400, message: 'too long', error: { code: 'string_above_max_length' } },
      'context_length',
    ],
    [
      "Anthropic's prompt is too long",
      {
        kind: 'http',
        status: 400,
        message: 'prompt is too long: 210000 tokens > 200000 maximum',
        error: { type: 'invalid_request_error' },
      },
      'context_length',
    ],
    [
      "vLLM's maximum context length in words",
      { kind: 'http', status: 400, message: "This model's maximum context length is 8192 tokens." },
      'context_length',
    ],
    [
      'a 404 model_not_found',
      { kind: 'http', status: 404, message: 'The model `gpt-9` does not exist', error: { code: 'model_not_found' } },
      'model_not_found',
    ],
    [
      'a 400 model_decommissioned',
      { kind: 'http', status: 400, message: 'retired', error: { code: 'model_decommissioned' } },
      'model_not_found',
    ],
    [
      "Anthropic's not_found_error naming the model",
      { kind: 'http', status: 404, message: 'model: claude-2.0', error: { type: 'not_found_error' } },
      'model_not_found',
    ],
  ])('sends %s to the next step without counting a failure', (_label, outcome, misfit) => {
    expect(classify(outcome)).toEqual({
      verdict: 'misconfigured_step',
      breakerFailure: false,
      reason: `HTTP ${(outcome as { status: number }).status} ${misfit}`,
      misfit,
    });
  });

  it.each<[string, UpstreamOutcome]>([
    [
      'a content-filter refusal',
      { kind: 'http', status: 400, message: 'refused', error: { code: 'content_policy_violation' } },
    ],
    ['a 404 not about the model', { kind: 'http', status: 404, message: 'Unknown request URL: POST /v1/messages' }],
    [
      'an Anthropic not_found_error not about the model',
      { kind: 'http', status: 404, message: 'File not found', error: { type: 'not_found_error' } },
    ],
    ['a 400 about a field', { kind: 'http', status: 400, message: "Invalid value for 'temperature'" }],
  ])("keeps %s the client's error", (_label, outcome) => {
    expect(classify(outcome).verdict).toBe('client_error');
  });

  it.each([401, 402, 403, 408, 409, 429, 500, 502, 503, 504, 599])(
    'fails over on HTTP %i and counts a breaker failure',
    (status) => {
      expect(classify(http(status))).toEqual({ verdict: 'next', breakerFailure: true, reason: `HTTP ${status}` });
    },
  );

  it.each([405, 406, 410, 411, 418, 451])(
    'fails over on HTTP %i, a status not listed as the client fault',
    (status) => {
      expect(classify(http(status)).verdict).toBe('next');
    },
  );

  it('fails over on a non-error status reported as a failure (a broken upstream)', () => {
    expect(classify(http(302))).toMatchObject({ verdict: 'next', breakerFailure: true, reason: 'HTTP 302' });
  });

  it('fails over on a timeout', () => {
    expect(classify({ kind: 'timeout' })).toEqual({ verdict: 'next', breakerFailure: true, reason: 'timeout' });
  });

  it("counts a timeout against the circuit only when it ran past the provider's own timeout_ms", () => {
    // the provider's own deadline (or a longer step deadline) ran out: the provider is slow for everyone
    expect(classify({ kind: 'timeout', afterMs: 30000 }, 30000)).toEqual({
      verdict: 'next',
      breakerFailure: true,
      reason: 'timeout',
    });
    expect(classify({ kind: 'timeout', afterMs: 60000 }, 30000)).toEqual({
      verdict: 'next',
      breakerFailure: true,
      reason: 'timeout',
    });
    // a key's shorter step timeout: that request fails over, every other tenant's circuit is untouched
    expect(classify({ kind: 'timeout', afterMs: 300 }, 30000)).toEqual({
      verdict: 'next',
      breakerFailure: false,
      reason: 'timeout',
    });
    expect(classify({ kind: 'timeout', afterMs: 29999 }, 30000).breakerFailure).toBe(false);
  });

  it("judges a first-token timeout by the provider's own first_token_timeout_ms (decisions §11)", () => {
    const firstToken = (afterMs: number) => classify({ kind: 'timeout', afterMs, phase: 'first_token' }, 30000, 10000);
    expect(firstToken(1500)).toEqual({ verdict: 'next', breakerFailure: false, reason: 'first token timeout' });
    expect(firstToken(10000)).toEqual({ verdict: 'next', breakerFailure: true, reason: 'first token timeout' });
  });

  it('never holds against the provider a deadline that passed while the call waited for a free socket', () => {
    expect(classify({ kind: 'timeout', afterMs: 0, local: true }, 30000)).toEqual({
      verdict: 'next',
      breakerFailure: false,
      reason: LOCAL_QUEUE_REASON,
    });
    expect(classify({ kind: 'timeout', local: true }).breakerFailure).toBe(false);
  });

  it("holds a timeout of unknown length against the provider (the transport's own deadline, past any step's)", () => {
    expect(classify({ kind: 'timeout' }, 30000).breakerFailure).toBe(true);
    expect(classify({ kind: 'timeout', afterMs: 300 }).breakerFailure).toBe(true);
  });

  it('fails over on a connection error and names it', () => {
    expect(classify({ kind: 'connection', code: 'ECONNREFUSED' })).toEqual({
      verdict: 'next',
      breakerFailure: true,
      reason: 'connection refused (ECONNREFUSED)',
    });
    expect(classify({ kind: 'connection', code: 'ENOTFOUND' }).reason).toBe('host not found (ENOTFOUND)');
    expect(classify({ kind: 'connection', code: 'EWHATEVER' }).reason).toBe('connection error (EWHATEVER)');
    expect(classify({ kind: 'connection', message: 'socket hang up' }).reason).toBe('connection error: socket hang up');
    expect(classify({ kind: 'connection' }).reason).toBe('connection error');
    expect(classify({ kind: 'connection', code: 'constructor' }).reason).toBe('connection error (constructor)');
  });

  it('fails over on a provider error reported inside a 200 answer', () => {
    expect(classify({ kind: 'provider_error', code: 1004, message: 'authentication failed' })).toEqual({
      verdict: 'next',
      breakerFailure: true,
      reason: 'provider error 1004: authentication failed',
    });
    expect(classify({ kind: 'provider_error', code: 'rate_limited' }).reason).toBe('provider error rate_limited');
    // still failed over (decisions §3), but not held against the provider's circuit
    expect(
      classify({ kind: 'provider_error', code: 1026, message: 'sensitive content', requestFault: true }),
    ).toMatchObject({ verdict: 'next', breakerFailure: false });
  });

  it('keeps the reason header-safe: one line, printable ASCII, bounded length', () => {
    const { reason } = classify({ kind: 'provider_error', code: 2013, message: `参数错误\n${'x'.repeat(300)}` });
    expect(reason).toMatch(/^provider error 2013: \?\?\?\? x+\.\.\.$/);
    expect(reason).toMatch(/^[\x20-\x7e]+$/);
    expect(reason.length).toBeLessThan(160);
  });
});

describe('alertMessage', () => {
  it('names the failed provider, the reason, the serving provider and the level', () => {
    expect(alertMessage('openai', 'HTTP 503', 'anthropic', 1)).toBe(
      'openai failed (HTTP 503); served by anthropic at level 1',
    );
  });

  it('composes with a classified reason', () => {
    const { reason } = classify({ kind: 'connection', code: 'ECONNRESET' });
    expect(alertMessage('minimax', reason, 'espeak', 2)).toBe(
      'minimax failed (connection reset (ECONNRESET)); served by espeak at level 2',
    );
  });
});
