/**
 * Model ids their providers have shut down or announced a shutdown for, with the date: the one list the
 * retired-model test reads (the example config, config/gateway.yaml, the README, the demo chain and the
 * OpenAPI examples must not name them). OpenAI's dates are the official SDK's (7.55, `resources/shared.d.ts`
 * and `resources/audio/speech.d.ts`); Anthropic's are its model deprecations page.
 */
export interface RetiredModel {
  id: string;
  /** The announced shutdown day (UTC), ISO `YYYY-MM-DD`. */
  shutdown: string;
  /** What to use instead. */
  replacement: string;
  /**
   * `speech`: an OpenAI `/audio/speech` model, which has no replacement on that endpoint; it may still be named
   * until its shutdown where docs/providers.md says what follows it. Chat and realtime models must be gone 60 days
   * before.
   */
  use: 'chat' | 'speech' | 'realtime';
}

const openAiChat = (shutdown: string, replacement: string, ids: string[]): RetiredModel[] =>
  ids.map((id) => ({ id, shutdown, replacement, use: 'chat' }));

export const RETIRED_MODELS: readonly RetiredModel[] = [
  { id: 'claude-3-5-haiku-latest', shutdown: '2026-02-19', replacement: 'claude-haiku-4-5', use: 'chat' },
  { id: 'claude-3-5-haiku-20241022', shutdown: '2026-02-19', replacement: 'claude-haiku-4-5', use: 'chat' },
  ...openAiChat('2027-01-14', 'gpt-5.4-mini', [
    'gpt-4o-mini',
    'gpt-4o-mini-2024-07-18',
    'gpt-4o',
    'gpt-4o-2024-11-20',
    'gpt-4o-2024-08-06',
    'gpt-4.1',
    'gpt-4.1-mini',
    'gpt-4.1-2025-04-14',
    'gpt-4.1-mini-2025-04-14',
  ]),
  ...openAiChat('2026-12-11', 'gpt-5.4-mini', ['gpt-5', 'gpt-5-mini', 'gpt-5-nano', 'o3']),
  ...openAiChat('2026-10-23', 'gpt-5.4-mini', [
    'gpt-4.1-nano',
    'o4-mini',
    'o3-mini',
    'o1',
    'gpt-4-turbo',
    'gpt-4',
    'gpt-3.5-turbo',
  ]),
  ...openAiChat('2026-02-17', 'gpt-5.4-mini', ['chatgpt-4o-latest']),
  ...['tts-1', 'tts-1-hd', 'gpt-4o-mini-tts', 'gpt-4o-mini-tts-2025-03-20', 'gpt-4o-mini-tts-2025-12-15'].map(
    (id): RetiredModel => ({
      id,
      shutdown: '2027-01-06',
      replacement: 'gpt-realtime-2.1-mini (Realtime API)',
      use: 'speech',
    }),
  ),
  // the SDK's deprecated RealtimeSessionCreateRequest.model values (shutdown 2027-01-20)
  ...[
    'gpt-realtime',
    'gpt-realtime-2025-08-28',
    'gpt-realtime-mini',
    'gpt-realtime-mini-2025-12-15',
    'gpt-audio-mini',
    'gpt-audio-mini-2025-12-15',
  ].map((id): RetiredModel => ({ id, shutdown: '2027-01-20', replacement: 'gpt-realtime-2.1-mini', use: 'realtime' })),
];

/** Days before its shutdown that a chat or realtime model must no longer be named. */
export const CHAT_NOTICE_DAYS = 60;

/** True when `model` may no longer be named on `today`. */
export function isRetired(model: RetiredModel, today: Date): boolean {
  const shutdown = Date.parse(`${model.shutdown}T00:00:00Z`);
  const notice = model.use === 'speech' ? 0 : CHAT_NOTICE_DAYS * 86_400_000;
  return today.getTime() >= shutdown - notice;
}
