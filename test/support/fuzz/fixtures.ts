import type { Json } from './schema';

/** Real rows the generated requests point at, made by the test before the run. */
export interface FuzzFixtures {
  adminToken: string;
  /** The key whose requests are sent (`Authorization: Bearer <owner>`). */
  owner: { id: string; secret: string };
  /** Another live key: its rows must look like missing ones to the owner. */
  other: { id: string; secret: string };
  /** A key deleted before the run: its secret must fail at once. */
  deletedSecret: string;
  /** Ids of the owner's rows by path parameter name (`consent_id` → a consent of the owner). */
  own: Record<string, string>;
  /** Ids of the other key's rows by path parameter name. */
  foreign: Record<string, string>;
  /** Valid query values by parameter name (`request_id` → a request of the owner). */
  query: Record<string, string>;
  /** A small valid WAV for uploads. */
  wav: Buffer;
}

/** What the walker knows about an operation beyond its schema. */
export interface KnownOperation {
  /** A body the service accepts (JSON), or the parts of a multipart form. */
  body?: Record<string, Json>;
  /** Multipart parts that are files. */
  files?: string[];
  /** The service passes unknown fields through, only checks the types of `checked`, and takes null for `nullable`. */
  passThrough?: { checked: string[]; nullable?: string[] };
  /** The table a successful call of this operation adds a row to (counted after the run). */
  creates?: 'voice_consents' | 'speech_tasks' | 'webhook_endpoints' | 'proxy_keys';
}

const CHAIN = [
  {
    provider: 'echo',
    model: 'echo-1',
    timeout_ms: 5000,
    usage_cap: { requests: 1000000, per: 'day' },
    voice_map: { '*': 'en-us' },
  },
];
const SPEECH = {
  model: 'speech-02-hd',
  text: 'Hi.',
  voice_setting: { voice_id: 'en-us', speed: 1, vol: 1, pitch: 0 },
  audio_setting: { sample_rate: 16000, bitrate: 128000, format: 'wav', channel: 1 },
};

/**
 * Operations whose valid request is known, so a single broken field must be named in `param`.
 * Operations not listed here (new ones) are still walked, with a body made from their schema, and
 * must still answer every case with a 4xx in the error shape.
 */
export const KNOWN_OPERATIONS: Record<string, KnownOperation> = {
  'POST /v1/admin/keys': { body: { name: 'fuzz key', chain: CHAIN }, creates: 'proxy_keys' },
  'PATCH /v1/admin/keys/{key_id}': { body: { name: 'fuzz key renamed', chain: CHAIN } },
  'POST /v1/audio/voice_consents': {
    body: { language: 'en-US', name: 'fuzz consent' },
    files: ['recording'],
    creates: 'voice_consents',
  },
  'POST /v1/audio/voice_consents/{consent_id}': { body: { name: 'renamed by fuzz' } },
  'POST /v1/chat/completions': {
    body: {
      model: 'echo-1',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: false,
      temperature: 0.5,
      max_tokens: 16,
    },
    passThrough: {
      checked: ['model', 'messages', 'messages[0]', 'messages[0].role', 'messages[0].content', 'stream'],
      nullable: ['messages[0].content'],
    },
  },
  'POST /v1/audio/speech': { body: SPEECH },
  'POST /v1/audio/speech/async': { body: SPEECH, creates: 'speech_tasks' },
  'POST /v1/user/webhooks': {
    body: { url: 'http://127.0.0.1:9/fuzz', events: ['failover', 'provider_recovered'] },
    creates: 'webhook_endpoints',
  },
  'PATCH /v1/user/webhooks/{webhook_id}': {
    body: { url: 'http://127.0.0.1:9/fuzz-renamed', events: ['failover'], enabled: true },
  },
};

/** The chain of the owner key: chat through `echo`, speech through the offline engine. */
export const OWNER_CHAIN = [
  { provider: 'echo', model: 'echo-1' },
  { provider: 'espeak', model: 'speech-02-hd' },
];
