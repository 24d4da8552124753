/** The messages of the speech stream, each with its direction, documentation, payload schema and examples. */
import { SYNC_TEXT_LIMIT } from './speech/speech-job';
import { PIECE_CHARS } from './speech/stream/text-pieces';

export type Schema = Record<string, unknown>;

const eventOf = (name: string, extra: Schema, required: string[] = []): Schema => ({
  type: 'object',
  required: ['event', ...required],
  properties: { event: { const: name }, ...extra },
});

const SESSION_ID = {
  type: 'string',
  pattern: '^sess_',
  description: "The stream's id, the same in every server message.",
};
const PROVIDER = { type: 'string', description: 'The provider of the step that serves (that served the first audio).' };
const FALLBACK_LEVEL = { type: 'integer', minimum: 0, description: "Depth in the key's chain: 0 for the entry step." };

export const MESSAGES: Record<
  string,
  { direction: 'client' | 'server'; summary: string; description: string; payload: Schema; examples: Schema[] }
> = {
  connected_success: {
    direction: 'server',
    summary: 'The socket is open',
    description: 'Sent as soon as the upgrade succeeded.',
    payload: eventOf('connected_success', { session_id: SESSION_ID }, ['session_id']),
    examples: [{ event: 'connected_success', session_id: 'sess_4H2kQm7ZpX0aVbN9cT3dRw1e' }],
  },
  task_start: {
    direction: 'client',
    summary: 'Start the task: model, voice and audio settings',
    description:
      "Once per connection. The model picks the entry step of the key's chain; the model and the voice are checked before `task_started`, so a bad " +
      'setting fails before any text is spoken. `task_continue` and `task_finish` may follow at once: they wait for these checks. Unknown fields are refused.',
    payload: { $ref: '#/components/schemas/TaskStart' },
    examples: [
      {
        event: 'task_start',
        model: 'speech-02-hd',
        voice_setting: { voice_id: 'en-us', speed: 1 },
        audio_setting: { format: 'mp3', sample_rate: 32000 },
      },
    ],
  },
  task_started: {
    direction: 'server',
    summary: 'The task is accepted',
    description: 'Names the step that would serve now: the first step of the chain whose circuit is not open.',
    payload: eventOf('task_started', { session_id: SESSION_ID, provider: PROVIDER, fallback_level: FALLBACK_LEVEL }, [
      'session_id',
      'provider',
      'fallback_level',
    ]),
    examples: [
      { event: 'task_started', session_id: 'sess_4H2kQm7ZpX0aVbN9cT3dRw1e', provider: 'espeak', fallback_level: 0 },
    ],
  },
  task_continue: {
    direction: 'client',
    summary: 'Text to speak',
    description:
      `As often as needed. Each message is spoken as it arrives and answered with its own audio; a long one is cut at sentence ends into pieces ` +
      `of at most ${PIECE_CHARS.toLocaleString('en')} characters. Send whole sentences or clauses for natural prosody.`,
    payload: eventOf(
      'task_continue',
      {
        text: {
          type: 'string',
          minLength: 1,
          maxLength: SYNC_TEXT_LIMIT,
          description: `1 to ${SYNC_TEXT_LIMIT.toLocaleString('en')} characters.`,
        },
      },
      ['text'],
    ),
    examples: [{ event: 'task_continue', text: 'Hello from the gateway. ' }],
  },
  task_continued: {
    direction: 'server',
    summary: 'Audio',
    description:
      "One or more per `task_continue`. `data.audio` is hex-encoded bytes of one continuous stream in the requested format (for mp3 the provider's " +
      'own frames; for pcm and flac one encoder for the whole task): concatenate the decoded chunks to get the file. `is_final` is true on the ' +
      'last audio message of the task. `provider` and `fallback_level` name the step that made it: a provider that breaks after audio began ' +
      'is continued on the next step, from the sentence that was being spoken.',
    payload: eventOf(
      'task_continued',
      {
        data: {
          type: 'object',
          required: ['audio'],
          properties: {
            audio: { type: 'string', pattern: '^([0-9a-f]{2})+$', description: 'Hex-encoded audio bytes.' },
          },
        },
        is_final: { type: 'boolean' },
        provider: PROVIDER,
        fallback_level: FALLBACK_LEVEL,
      },
      ['data', 'is_final', 'provider', 'fallback_level'],
    ),
    examples: [
      { event: 'task_continued', data: { audio: 'fffb90c4…' }, is_final: false, provider: 'espeak', fallback_level: 0 },
    ],
  },
  task_finish: {
    direction: 'client',
    summary: 'No more text',
    description: 'The remaining audio follows, then `task_finished` and close 1000.',
    payload: eventOf('task_finish', {}),
    examples: [{ event: 'task_finish' }],
  },
  task_finished: {
    direction: 'server',
    summary: 'All audio was sent',
    description: 'Then the server closes with 1000 `task finished`.',
    payload: eventOf('task_finished', { session_id: SESSION_ID }, ['session_id']),
    examples: [{ event: 'task_finished', session_id: 'sess_4H2kQm7ZpX0aVbN9cT3dRw1e' }],
  },
  task_failed: {
    direction: 'server',
    summary: 'The task failed',
    description:
      'Then close 1008 for a client mistake (invalid JSON, a binary frame, an unknown event, a message out of order, invalid settings, text over ' +
      'its limit, a model or voice the chain cannot serve) or 1011 when speaking failed (`all_providers_failed`, `no_provider_available`, ' +
      '`upstream_rejected`, or the serving provider broke after audio began and no later step could continue).',
    payload: eventOf(
      'task_failed',
      {
        session_id: SESSION_ID,
        error: {
          type: 'object',
          required: ['code', 'message'],
          properties: {
            code: {
              type: 'string',
              examples: ['invalid_json', 'voice_not_found', 'text_too_long', 'all_providers_failed'],
            },
            message: { type: 'string' },
          },
        },
      },
      ['session_id', 'error'],
    ),
    examples: [
      {
        event: 'task_failed',
        session_id: 'sess_4H2kQm7ZpX0aVbN9cT3dRw1e',
        error: { code: 'voice_not_found', message: "The voice 'nobody' is not available on the chain's entry step." },
      },
    ],
  },
};
