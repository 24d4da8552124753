import { Injectable } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';
import { AdapterRegistry } from '../providers/adapter-registry';
import type { PlannedStep } from '../failover/chain';
import { FailoverService } from '../failover/failover.service';
import type { ProviderAdapter } from '../providers/provider-adapter';
import type { AuthenticatedKey } from '../keys/key-directory';
import { GatewayConfig } from '../config/gateway-config';
import type { CustomVoiceEntity } from './custom-voice.entity';
import { CustomVoiceDirectory, looksLikeCustomVoiceId } from './custom-voice-directory';
import { CustomVoicesService } from './custom-voices.service';
import type { VoiceDto } from './dto/voice.dto';

export type VoiceEntry = VoiceDto;

/** The voice one step speaks with: the provider's own id, and why it is not the requested one when it is not. */
export interface StepVoice {
  voiceId: string;
  /** The step's provider holds the requested custom voice. */
  custom: boolean;
  /** Set when a fallback speaks instead of the requested custom voice (it goes into the failover alert). */
  substitution: string | null;
}

const voiceNotFound = (message: string): DomainError =>
  new DomainError('voice_not_found', message, { param: 'voice_setting.voice_id' });

/** A step's voice for the requested one: its voice_map entry, else the default (`*`) entry. */
const mapped = (step: PlannedStep, requested: string): string | undefined =>
  step.step.voice_map?.[requested] ?? step.step.voice_map?.['*'];

/** Which voice each chain step speaks with, and the voices a key can use. */
@Injectable()
export class VoicesService {
  constructor(
    private readonly adapters: AdapterRegistry,
    private readonly gateway: GatewayConfig,
    private readonly failover: FailoverService,
    private readonly customVoices: CustomVoiceDirectory,
    private readonly customVoiceList: CustomVoicesService,
  ) {}

  /**
   * The steps a speech request walks: the chain's plan for the model, except that a custom voice sends the
   * request to the provider that holds it first (the other steps follow as fallbacks). 400 before any upstream
   * call when the model, or the voice, cannot be served.
   */
  async route(key: AuthenticatedKey, job: { model: string; voiceId: string }): Promise<PlannedStep[]> {
    const planned = this.failover.plan(key, job.model, 'speech');
    const custom = await this.customVoice(key, job.voiceId);
    if (!custom) {
      await this.assertEntryVoice(planned[0], job.voiceId);
      return planned;
    }
    const holder = planned.findIndex((step) => step.provider === custom.provider);
    if (holder < 0) {
      throw voiceNotFound(
        `The custom voice '${custom.id}' lives on ${custom.provider}, which is not a speech step of this key's chain for model '${job.model}'.`,
      );
    }
    return [planned[holder], ...planned.filter((_, i) => i !== holder)].map((step, level) => ({ ...step, level }));
  }

  /** The key's custom voice for a requested id; 400 for an id of this service's shape that is not the key's. */
  async customVoice(key: AuthenticatedKey, requested: string): Promise<CustomVoiceEntity | null> {
    if (!looksLikeCustomVoiceId(requested)) return null;
    const voice = await this.customVoices.find(key.id, requested);
    // never passed through to a provider as is: it may be another key's voice there
    if (!voice)
      throw voiceNotFound(
        `No custom voice '${requested}' exists for this key; GET /v1/audio/voices lists the voices it can use.`,
      );
    return voice;
  }

  /** The voice a request without `voice_setting` speaks with: the entry step's `*` voice_map entry, else its provider's default. */
  async defaultVoice(key: AuthenticatedKey, model: string): Promise<string> {
    const entry = this.failover.plan(key, model, 'speech')[0];
    const adapter = this.adapters.get(entry.provider);
    const voiceId = mapped(entry, '*') ?? adapter?.defaultVoice ?? (await adapter?.voices?.())?.[0]?.id;
    if (!voiceId) {
      throw new DomainError('missing_field', `${entry.provider} has no default voice: send voice_setting.voice_id.`, {
        param: 'voice_setting',
      });
    }
    return voiceId;
  }

  /** The voice `step` speaks with for a custom voice: its own on the holder, else its voice_map or default one. */
  async customVoiceFor(step: PlannedStep, adapter: ProviderAdapter, voice: CustomVoiceEntity): Promise<StepVoice> {
    if (step.provider === voice.provider) return { voiceId: voice.upstreamVoiceId, custom: true, substitution: null };
    const voiceId = mapped(step, voice.id) ?? adapter.defaultVoice ?? (await adapter.voices?.())?.[0]?.id;
    if (!voiceId)
      throw voiceNotFound(`${step.provider} has no voice to speak instead of the custom voice '${voice.id}'.`);
    return {
      voiceId,
      custom: false,
      substitution: `custom voice ${voice.id} is held by ${voice.provider}; ${step.provider} spoke with its voice ${voiceId}`,
    };
  }

  /** The entry step must be able to speak the voice, or the request is the client's error (no upstream call). */
  async assertEntryVoice(entry: PlannedStep, requested: string): Promise<void> {
    const adapter = this.adapters.get(entry.provider);
    const fromMap = mapped(entry, requested);
    // a voice_map target is the operator's choice; an id the client sends must be one the provider allows it
    if (adapter?.acceptsVoice && !(await adapter.acceptsVoice(fromMap ?? requested, fromMap ? 'operator' : 'client'))) {
      throw new DomainError(
        'voice_not_found',
        `The voice '${requested}' is not a voice of ${entry.provider} and its chain step has no voice_map entry for it; GET /v1/audio/voices lists the voices this key can use.`,
        {
          param: 'voice_setting.voice_id',
        },
      );
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

  /** The key's custom voices (newest first), then the built-in voices of every speech provider in its chain. */
  async list(key: AuthenticatedKey): Promise<VoiceEntry[]> {
    const custom = (await this.customVoiceList.list(key.id)).map((v): VoiceEntry => ({ ...v, languages: [] }));
    return [...custom, ...(await this.builtIn(key))];
  }

  private async builtIn(key: AuthenticatedKey): Promise<VoiceEntry[]> {
    const providers = [...new Set(key.chain.map((s) => s.provider))].filter((name) =>
      this.gateway.provider(name)?.capabilities.includes('speech'),
    );
    const lists = await Promise.all(
      providers.map(async (provider) => {
        const voices = (await this.adapters.get(provider)?.voices?.()) ?? [];
        return voices.map(
          (v): VoiceEntry => ({
            id: v.id,
            object: 'audio.voice',
            name: v.name,
            provider,
            languages: v.languages,
            type: 'builtin',
          }),
        );
      }),
    );
    return lists.flat();
  }
}
