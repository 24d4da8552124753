import type { OpenAPIObject } from '@nestjs/swagger';

/**
 * Request examples that succeed on Swagger UI's first "Execute" with the demo key of a fresh `npm start`
 * (chain: echo `echo-1` for chat, the offline espeak engine `speech-02-hd` with voice `en-us` for speech).
 * Kept here, by operation id, so Swagger UI's generated sample (every optional field, `"string"` values)
 * never reaches a user.
 */
const SPEECH_TEXT = 'Hello from the gateway. This sentence was spoken by the offline engine.';
const VOICE = { voice_id: 'en-us' };

const REQUEST_EXAMPLES: Record<string, unknown> = {
  Keys_create: {
    name: 'team-a',
    chain: [
      { provider: 'echo', model: 'echo-1' },
      { provider: 'espeak', model: 'speech-02-hd' },
    ],
  },
  Keys_update: { name: 'team-a-renamed' },
  Consents_rename: { name: 'Consent of Ada (renamed)' },
  Chat_create: { model: 'echo-1', messages: [{ role: 'user', content: 'Say hello in five words.' }] },
  SpeechTasks_create: {
    model: 'speech-02-hd',
    text: SPEECH_TEXT,
    voice_setting: VOICE,
    audio_setting: { format: 'mp3' },
  },
  CustomVoices_design: {
    name: 'Calm narrator',
    prompt: 'A calm, warm narrator with a low voice, speaking slowly.',
    preview_text: 'Welcome back. Today we look at three small ideas.',
  },
  Webhooks_create: { url: 'https://example.com/gateway-events', events: ['failover', 'provider_recovered'] },
  Webhooks_update: { events: ['failover', 'provider_recovered'], enabled: true },
  MiniMaxSpeech_t2a: {
    model: 'speech-02-hd',
    text: SPEECH_TEXT,
    voice_setting: VOICE,
    audio_setting: { format: 'mp3' },
    output_format: 'url',
  },
  MiniMaxSpeech_t2aAsync: { model: 'speech-02-hd', text: SPEECH_TEXT, voice_setting: VOICE },
  MiniMaxVoices_list: { voice_type: 'all' },
  MiniMaxVoices_clone: { file_id: 1, voice_id: 'MyVoice001' },
  MiniMaxVoices_design: {
    prompt: 'A calm, warm narrator with a low voice, speaking slowly.',
    preview_text: 'Welcome back. Today we look at three small ideas.',
  },
};

/** Text fields of the upload forms (the file is the user's to choose). */
const FORM_FIELD_EXAMPLES: Record<string, Record<string, unknown>> = {
  CreateVoiceConsentForm: { language: 'en-US', name: 'Consent of Ada' },
  // empty, not Swagger UI's "string": the type-prompt fields must be left out of a clone
  CreateVoiceForm: { type: 'audio_sample', name: 'My voice', consent: '', prompt: '', script_hint: '', model: '' },
  FileUploadForm: { purpose: 'voice_clone' },
};

/** Parameters with a value that exists on a fresh start; an id made by another call is typed in by the user. */
const PARAMETER_EXAMPLES: Record<string, Record<string, unknown>> = {
  Models_retrieve: { model_id: 'echo-1' },
};

/** Where the id of a path or query parameter comes from, when the decorators do not say. */
const ID_SOURCES: Record<string, string> = {
  key_id: 'Id of a proxy key (`pk_…`): the `id` answered by `POST /v1/admin/keys` or listed by `GET /v1/admin/keys`.',
  consent_id:
    'Id of a voice consent (`vc_…`): the `id` answered by `POST /v1/audio/voice_consents` or listed by `GET /v1/audio/voice_consents`.',
  task_id: 'Id of an async speech task (`task_…`): the `id` answered by `POST /v1/audio/speech/async`.',
  voice_id: 'Id of a custom voice: the `id` answered by `POST /v1/audio/voices` or `POST /v1/audio/voices/design`.',
  webhook_id:
    'Id of a webhook endpoint (`we_…`): the `id` answered by `POST /v1/user/webhooks` or listed by `GET /v1/user/webhooks`.',
};

const MINIMAX_ID_SOURCES: Record<string, string> = {
  task_id: 'The `task_id` answered by `POST /v1/t2a_async_v2`.',
  file_id: 'The `file_id` answered by `POST /v1/t2a_async_v2` (the audio of a finished task).',
  token: 'The last segment of the `data.audio` link answered by `POST /v1/t2a_v2` with `output_format: "url"`.',
};

type Operation = {
  operationId?: string;
  tags?: string[];
  parameters?: Array<{ name?: string; description?: string; example?: unknown } | { $ref: string }>;
  requestBody?: { content?: Record<string, { example?: unknown; examples?: unknown }> } | { $ref: string };
};

/**
 * Adds the examples and id sources above to the document. Lenient on purpose: under ts-jest (no swagger CLI
 * plugin) the document has fewer properties; the browser test checks the committed document has them all.
 */
export function withRequestExamples(document: OpenAPIObject): OpenAPIObject {
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(item) as Operation[]) {
      if (!operation || typeof operation !== 'object' || !operation.operationId) continue;
      const id = operation.operationId;
      const body = operation.requestBody && 'content' in operation.requestBody ? operation.requestBody.content : {};
      const json = body?.['application/json'];
      if (id in REQUEST_EXAMPLES && json) {
        json.example = REQUEST_EXAMPLES[id];
      }
      const minimax = operation.tags?.includes('minimax') ?? false;
      for (const parameter of operation.parameters ?? []) {
        if ('$ref' in parameter || !parameter.name) continue;
        const example = PARAMETER_EXAMPLES[id]?.[parameter.name];
        if (example !== undefined) {
          parameter.example = example;
        }
        const source = (minimax ? MINIMAX_ID_SOURCES : ID_SOURCES)[parameter.name];
        if (source && !parameter.description) parameter.description = source;
      }
    }
  }
  const schemas = (document.components?.schemas ?? {}) as Record<
    string,
    { properties?: Record<string, { example?: unknown }> }
  >;
  for (const [name, fields] of Object.entries(FORM_FIELD_EXAMPLES)) {
    for (const [field, example] of Object.entries(fields)) {
      const property = schemas[name]?.properties?.[field];
      if (property) property.example = example;
    }
  }
  return document;
}
