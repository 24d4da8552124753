import { Injectable } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';
import { AdapterRegistry } from '../providers/adapter-registry';
import { HONOURED_FIELDS, MIX_ONLY_VOICE, type SpeechOptions } from '../providers/speech-fields';
import type { PlannedStep } from '../failover/chain';
import { FailoverService } from '../failover/failover.service';
import type { ProviderAdapter } from '../providers/provider-adapter';
import type { AuthenticatedKey } from '../keys/key-directory';
import { GatewayConfig } from '../config/gateway-config';
import type { CustomVoiceEntity } from './custom-voice.entity';
import { CustomVoiceDirectory, looksLikeCustomVoiceId } from './custom-voice-directory';
import { CustomVoicesService } from './custom-voices.service';
import type { VoiceDto } from './dto/voice.dto';
import { VOICE_FIELDS, VoicePlan, type StepVoices, type VoiceField, type VoiceRequest } from './voice-plan';
import { VoiceRemovals } from './voice-removals';

export type VoiceEntry = VoiceDto;

/** One voice id of a request, with the field it came in (the `param` of its errors) and, for `voice_…`, the key's voice. */
interface RequestedVoice {
  id: string;
  param: string;
  custom: CustomVoiceEntity | null;
}

/** How an error names a voice: `'<id>'`, with its field when it is not `voice_setting.voice_id`. */
const named = (id: string, param: string): string =>
  param === 'voice_setting.voice_id' ? `'${id}'` : `'${id}' (${param})`;

const voiceNotFound = (message: string, param = 'voice_setting.voice_id'): DomainError =>
  new DomainError('voice_not_found', message, { param });

/** A step's voice for the requested one: its voice_map entry, else the default (`*`) entry. */
const mapped = (step: PlannedStep, requested: string): string | undefined =>
  step.step.voice_map?.[requested] ?? step.step.voice_map?.['*'];

/** The voice a step speaks with when it cannot speak the requested one: its kind's default, else its first. */
const defaultOf = async (adapter: ProviderAdapter): Promise<string | undefined> =>
  adapter.defaultVoice ?? (await adapter.voices?.())?.[0]?.id;

/** Which voice each chain step speaks with, and the voices a key can use. */
@Injectable()
export class VoicesService {
  constructor(
    private readonly adapters: AdapterRegistry,
    private readonly gateway: GatewayConfig,
    private readonly failover: FailoverService,
    private readonly customVoices: CustomVoiceDirectory,
    private readonly customVoiceList: CustomVoicesService,
    private readonly removals: VoiceRemovals,
  ) {}

  /**
   * Every voice of a speech request, for every step it may walk (decisions §6, "no side door"): the chain's plan
   * for the model, except that a custom voice in `voice_setting.voice_id` sends the request to the provider that
   * holds it first. Each voice id, `voice_id` and those of every VOICE_FIELDS field, passes the one check
   * (`speakable`). 400 before any upstream call when the model, or a voice the entry step would send, cannot be served.
   */
  async plan(
    key: AuthenticatedKey,
    request: VoiceRequest,
    /** Leaves out the steps that cannot serve the request for another reason (its audio format). */
    narrow: (steps: PlannedStep[]) => PlannedStep[] = (steps) => steps,
  ): Promise<VoicePlan> {
    const chain = this.failover.plan(key, request.model, 'speech');
    const mixOnly = request.voiceId === MIX_ONLY_VOICE;
    const options = request.options;
    const fields = await Promise.all(
      VOICE_FIELDS.map(async (field) => ({
        field,
        voices: options
          ? await Promise.all(field.ids(options).map((id, i) => this.requested(key, id, field.param(i))))
          : [],
      })),
    );
    // a mix named by timbre_weights alone: a step that cannot mix speaks its heaviest voice (decisions §10)
    const voice = mixOnly
      ? heaviestOf(fields, options)
      : await this.requested(key, request.voiceId, 'voice_setting.voice_id');
    const steps = narrow(voice.custom ? this.holderFirst(chain, voice.custom, request.model) : chain);
    const byLevel = new Map<number, StepVoices | DomainError>();
    for (const step of steps) {
      const entry = step === steps[0];
      const adapter = this.adapters.get(step.provider);
      // a step without an adapter is skipped by the failover core: it never speaks
      if (!adapter) {
        byLevel.set(step.level, voiceNotFound(`${step.provider} is not configured on this gateway.`));
        continue;
      }
      try {
        let stepOptions = options;
        for (const { field, voices } of fields) {
          if (!stepOptions || voices.length === 0) continue;
          const honoured = HONOURED_FIELDS[adapter.kind].includes(field.field);
          const ids = honoured ? await Promise.all(voices.map((v) => this.speakable(step, adapter, v, entry))) : [];
          stepOptions = field.write(stepOptions, ids);
        }
        // the mix is the voice where the step mixes (some of it left); elsewhere the heaviest voice, substituted as usual
        const primary =
          mixOnly && stepOptions?.timbre_weights?.length
            ? { voiceId: MIX_ONLY_VOICE, custom: false, substitution: null }
            : await this.stepVoice(step, adapter, voice, entry);
        byLevel.set(step.level, { ...primary, ...(stepOptions ? { options: stepOptions } : {}) });
      } catch (err) {
        // the entry step's refusal is the client's error; a fallback that cannot speak fails only its attempt
        if (entry || !(err instanceof DomainError)) throw err;
        byLevel.set(step.level, err);
      }
    }
    const custom = [...(mixOnly ? [] : [voice]), ...fields.flatMap((f) => f.voices)].flatMap((v) =>
      v.custom ? [{ id: v.id, param: v.param }] : [],
    );
    return new VoicePlan(steps, byLevel, custom);
  }

  /**
   * A plan made earlier (a stream's task_start) before another of its steps speaks: each custom voice it uses is
   * still the key's and none of the step's voices waits for removal upstream, else 400 as `plan` would answer.
   */
  async confirm(key: AuthenticatedKey, plan: VoicePlan): Promise<VoicePlan> {
    for (const { id, param } of plan.customVoices) {
      if (!(await this.customVoices.find(key.id, id)))
        throw voiceNotFound(`The custom voice ${named(id, param)} was deleted.`, param);
    }
    for (const step of plan.steps) {
      const removed = plan.upstreamIds(step).find((id) => this.removals.isPending(step.provider, id));
      if (removed) throw voiceNotFound(`A voice of this stream at ${step.provider} was deleted.`);
    }
    return plan;
  }

  /** The voice a request without `voice_setting` speaks with: the entry step's `*` voice_map entry, else its provider's default. */
  async defaultVoice(key: AuthenticatedKey, model: string): Promise<string> {
    const entry = this.failover.plan(key, model, 'speech')[0];
    const adapter = this.adapters.get(entry.provider);
    const voiceId = mapped(entry, '*') ?? (adapter ? await defaultOf(adapter) : undefined);
    if (!voiceId) {
      throw new DomainError('missing_field', `${entry.provider} has no default voice: send voice_setting.voice_id.`, {
        param: 'voice_setting',
      });
    }
    return voiceId;
  }

  /** The key's custom voice for an id of this service's shape (400 for one that is not the key's); null for any other id. */
  private async requested(key: AuthenticatedKey, id: string, param: string): Promise<RequestedVoice> {
    if (!looksLikeCustomVoiceId(id)) return { id, param, custom: null };
    const custom = await this.customVoices.find(key.id, id);
    // never passed through to a provider as is: it may be another key's voice there
    if (!custom)
      throw voiceNotFound(
        `No custom voice ${named(id, param)} exists for this key; GET /v1/audio/voices lists the voices it can use.`,
        param,
      );
    return { id, param, custom };
  }

  /** The chain with the custom voice's holder first (the other steps follow as fallbacks). */
  private holderFirst(chain: PlannedStep[], custom: CustomVoiceEntity, model: string): PlannedStep[] {
    const holder = chain.findIndex((step) => step.provider === custom.provider);
    if (holder < 0) {
      throw voiceNotFound(
        `The custom voice '${custom.id}' lives on ${custom.provider}, which is not a speech step of this key's chain for model '${model}'.`,
      );
    }
    return [chain[holder], ...chain.filter((_, i) => i !== holder)].map((step, level) => ({ ...step, level }));
  }

  /** `voice_setting.voice_id` at one step: the requested voice if the step can speak it, else (a fallback) its default. */
  private async stepVoice(
    step: PlannedStep,
    adapter: ProviderAdapter,
    voice: RequestedVoice,
    entry: boolean,
  ): Promise<Omit<StepVoices, 'options'>> {
    const custom = voice.custom !== null && voice.custom.provider === step.provider;
    const voiceId = (await this.speakable(step, adapter, voice, entry)) ?? (await defaultOf(adapter));
    if (!voiceId) throw voiceNotFound(`${step.provider} has no voice to speak instead of '${voice.id}'.`);
    const substitution =
      voice.custom && !custom
        ? `custom voice ${voice.id} is held by ${voice.custom.provider}; ${step.provider} spoke with its voice ${voiceId}`
        : null;
    return { voiceId, custom, substitution };
  }

  /**
   * The one voice check: what a requested voice id is at one step, or null when the step cannot speak it (a
   * fallback then speaks its default, or leaves the voice out of a mix). A custom voice is its holder's upstream
   * id there; elsewhere the step's voice_map entry. Any other id goes through the step's voice_map, and the
   * provider must allow the result (its built-in voices, the operator's `allowed_voice_ids`, a voice_map target)
   * and it must not be a voice waiting for removal. The entry step's refusal is `400 voice_not_found` naming the field.
   */
  private async speakable(
    step: PlannedStep,
    adapter: ProviderAdapter,
    voice: RequestedVoice,
    entry: boolean,
  ): Promise<string | null> {
    if (voice.custom?.provider === step.provider) return voice.custom.upstreamVoiceId;
    const fromMap = mapped(step, voice.id);
    // a custom voice the step does not hold is only ever spoken as the operator's mapping
    if (voice.custom && !fromMap) return null;
    const candidate = fromMap ?? voice.id;
    const removing = this.removals.isPending(step.provider, candidate);
    // a voice_map target is the operator's choice; an id the client sends must be one the provider allows it
    const allowed =
      !removing && (!adapter.acceptsVoice || (await adapter.acceptsVoice(candidate, fromMap ? 'operator' : 'client')));
    if (allowed) return candidate;
    if (!entry) return null;
    throw voiceNotFound(
      removing
        ? `The voice ${named(voice.id, voice.param)} was deleted and is being removed from ${step.provider}.`
        : `The voice ${named(voice.id, voice.param)} is not a voice of ${step.provider} and its chain step has no voice_map entry for it; GET /v1/audio/voices lists the voices this key can use.`,
      voice.param,
    );
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

/** The mix's heaviest voice (the first of equals): what a step that cannot mix speaks for a timbre_weights-only request. */
function heaviestOf(
  fields: Array<{ field: VoiceField; voices: RequestedVoice[] }>,
  options?: SpeechOptions,
): RequestedVoice {
  const weights = options?.timbre_weights ?? [];
  const mix = fields.find((f) => f.field.field === 'timbre_weights')?.voices ?? [];
  let heaviest = 0;
  for (let i = 1; i < mix.length; i++) if ((weights[i]?.weight ?? 0) > (weights[heaviest]?.weight ?? 0)) heaviest = i;
  if (!mix[heaviest]) throw new Error('a timbre_weights-only request has no voice in its mix');
  return mix[heaviest];
}
