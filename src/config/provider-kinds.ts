export type Capability = 'chat' | 'speech';

export const PROVIDER_KINDS = ['openai', 'anthropic', 'minimax', 'elevenlabs', 'espeak', 'echo'] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

interface KindTraits {
  capabilities: Capability[];
  /** API root including the version segment, as the vendor's SDK takes it. */
  defaultBaseUrl: string | null;
  /** Model a generated (demo) chain step uses for each capability. */
  defaultModels: Partial<Record<Capability, string>>;
  needsApiKey: boolean;
}

export const KIND_TRAITS: Record<ProviderKind, KindTraits> = {
  openai: {
    capabilities: ['chat', 'speech'],
    defaultBaseUrl: 'https://api.openai.com/v1',
    // a realtime model speaks over the Realtime API: OpenAI's /audio/speech models shut down on 2027-01-06
    defaultModels: { chat: 'gpt-5.4-mini', speech: 'gpt-realtime-2.1-mini' },
    needsApiKey: true,
  },
  anthropic: {
    capabilities: ['chat'],
    defaultBaseUrl: 'https://api.anthropic.com/v1',
    defaultModels: { chat: 'claude-haiku-4-5' },
    needsApiKey: true,
  },
  minimax: {
    capabilities: ['speech'],
    defaultBaseUrl: 'https://api.minimax.io/v1',
    defaultModels: { speech: 'speech-02-hd' },
    needsApiKey: true,
  },
  elevenlabs: {
    capabilities: ['speech'],
    defaultBaseUrl: 'https://api.elevenlabs.io/v1',
    defaultModels: { speech: 'eleven_multilingual_v2' },
    needsApiKey: true,
  },
  espeak: {
    capabilities: ['speech'],
    defaultBaseUrl: null,
    defaultModels: { speech: 'speech-02-hd' },
    needsApiKey: false,
  },
  echo: { capabilities: ['chat'], defaultBaseUrl: null, defaultModels: { chat: 'echo-1' }, needsApiKey: false },
};
