import { Injectable } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';
import { AdapterRegistry } from '../failover/adapter-registry';
import type { PlannedStep } from '../failover/chain';
import type { ProviderAdapter } from '../failover/provider-adapter';
import type { AuthenticatedKey } from '../keys/key-directory';
import { GatewayConfig } from '../config/gateway-config';

export interface VoiceEntry {
  id: string;
  object: 'audio.voice';
  name: string;
  provider: string;
  languages: string[];
  type: 'builtin';
}

/** A step's voice for the requested one: its voice_map entry, else the default (`*`) entry. */
const mapped = (step: PlannedStep, requested: string): string | undefined => step.step.voice_map?.[requested] ?? step.step.voice_map?.['*'];

/** Which voice each chain step speaks with, and the voices a key can use. */
@Injectable()
export class VoicesService {
  constructor(
    private readonly adapters: AdapterRegistry,
    private readonly gateway: GatewayConfig,
  ) {}

  /** The entry step must be able to speak the voice, or the request is the client's error (no upstream call). */
  async assertEntryVoice(entry: PlannedStep, requested: string): Promise<void> {
    const adapter = this.adapters.get(entry.provider);
    const voice = mapped(entry, requested) ?? requested;
    if (adapter?.acceptsVoice && !(await adapter.acceptsVoice(voice))) {
      throw new DomainError('voice_not_found', `The voice '${requested}' is not a voice of ${entry.provider} and its chain step has no voice_map entry for it.`, {
        param: 'voice_setting.voice_id',
      });
    }
  }

  /** A fallback speaks with its own voice: the mapped one, the requested one if it has it, else its default. */
  async voiceFor(step: PlannedStep, adapter: ProviderAdapter, requested: string): Promise<string> {
    const fromMap = mapped(step, requested);
    if (fromMap) return fromMap;
    if (!adapter.acceptsVoice || (await adapter.acceptsVoice(requested))) return requested;
    if (adapter.defaultVoice) return adapter.defaultVoice;
    const voices = (await adapter.voices?.()) ?? [];
    return voices[0]?.id ?? requested;
  }

  /** Built-in voices of every speech provider in the key's chain. */
  async list(key: AuthenticatedKey): Promise<VoiceEntry[]> {
    const providers = [...new Set(key.chain.map((s) => s.provider))].filter((name) => this.gateway.provider(name)?.capabilities.includes('speech'));
    const lists = await Promise.all(
      providers.map(async (provider) => {
        const voices = (await this.adapters.get(provider)?.voices?.()) ?? [];
        return voices.map((v): VoiceEntry => ({ id: v.id, object: 'audio.voice', name: v.name, provider, languages: v.languages, type: 'builtin' }));
      }),
    );
    return lists.flat();
  }
}
