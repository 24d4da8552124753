import { AnthropicAdapterFactory } from './anthropic.adapter';
import { EchoAdapterFactory } from './echo.adapter';
import { ElevenLabsAdapterFactory } from './elevenlabs.adapter';
import { MiniMaxAdapterFactory } from './minimax.adapter';
import { OpenAiAdapterFactory } from './openai.adapter';

export { AnthropicAdapter, AnthropicAdapterFactory } from './anthropic.adapter';
export { EchoAdapter, EchoAdapterFactory } from './echo.adapter';
export { ElevenLabsAdapter, ElevenLabsAdapterFactory } from './elevenlabs.adapter';
export { MiniMaxAdapter, MiniMaxAdapterFactory } from './minimax.adapter';
export { OpenAiAdapter, OpenAiAdapterFactory } from './openai.adapter';

/** The chat adapter factories, to register as providers and collect under ADAPTER_FACTORIES. */
export const CHAT_ADAPTER_FACTORIES = [OpenAiAdapterFactory, AnthropicAdapterFactory, EchoAdapterFactory] as const;

/** The speech-only HTTP adapter factories; `openai` speaks too but is already in CHAT_ADAPTER_FACTORIES (espeak lives in providers/). */
export const SPEECH_ADAPTER_FACTORIES = [MiniMaxAdapterFactory, ElevenLabsAdapterFactory] as const;
