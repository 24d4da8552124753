import type { DomainError } from '../common/errors/domain-error';
import type { PlannedStep } from '../failover/chain';
import { MIX_ONLY_VOICE, type SpeechField, type SpeechOptions } from '../providers/speech-fields';

/** What a speech request asks of its voices: the model, `voice_setting.voice_id`, and MiniMax's optional fields. */
export interface VoiceRequest {
  model: string;
  voiceId: string;
  options?: SpeechOptions;
}

/** The voices one step speaks with, as its provider knows them. */
export interface StepVoices {
  /** `voice_setting.voice_id` at this step (MIX_ONLY_VOICE: none, the step mixes the request's timbre_weights). */
  voiceId: string;
  /** The step's provider holds the requested custom voice. */
  custom: boolean;
  /** Set when a fallback speaks instead of the requested custom voice (it goes into the failover alert). */
  substitution: string | null;
  /** The request's optional fields with every voice field's ids as this step sends them. */
  options?: SpeechOptions;
}

/**
 * A request field besides `voice_setting.voice_id` that names voices: how its ids are read, and written back
 * with each step's ids (null: that voice is left out; none left: the field is left out). A voice field MiniMax
 * adds later is one more entry of VOICE_FIELDS, and then passes the same check.
 */
export interface VoiceField {
  /** As HONOURED_FIELDS names it: a step whose kind ignores the field gets none of it. */
  field: SpeechField;
  ids(options: SpeechOptions): string[];
  /** The `param` of an error about its `i`-th id. */
  param(i: number): string;
  write(options: SpeechOptions, ids: ReadonlyArray<string | null>): SpeechOptions;
}

export const VOICE_FIELDS: readonly VoiceField[] = [
  {
    field: 'timbre_weights',
    ids: (options) => (options.timbre_weights ?? []).map((w) => w.voice_id),
    param: (i) => `timbre_weights[${i}].voice_id`,
    write: ({ timbre_weights: mix, ...rest }, ids) => {
      const kept = (mix ?? []).flatMap((w, i) => (ids[i] ? [{ voice_id: ids[i], weight: w.weight }] : []));
      return kept.length > 0 ? { ...rest, timbre_weights: kept } : rest;
    },
  },
];

/**
 * Every voice of a speech request, decided once before its first attempt (VoicesService.plan) and read by
 * every later layer: the steps in the order they are tried (a custom voice's holder first), and what each
 * step speaks with.
 */
export class VoicePlan {
  constructor(
    readonly steps: PlannedStep[],
    /** By step level: its voices, or why it cannot speak (that attempt fails, the next step is tried). */
    private readonly byLevel: ReadonlyMap<number, StepVoices | DomainError>,
    /** The key's custom voices the plan speaks with, and their fields (a plan kept for later is confirmed against them). */
    readonly customVoices: ReadonlyArray<{ id: string; param: string }>,
  ) {}

  /** The voices of one of `steps`; throws when that step cannot speak the request. */
  at(step: PlannedStep): StepVoices {
    const voices = this.byLevel.get(step.level);
    if (!voices) throw new Error(`step ${step.level} (${step.provider}) is not in the voice plan`);
    if (voices instanceof Error) throw voices;
    return voices;
  }

  /** Whether `step` can speak the request (its voices resolved; else its attempt fails and the next is tried). */
  canSpeak(step: PlannedStep): boolean {
    const voices = this.byLevel.get(step.level);
    return voices !== undefined && !(voices instanceof Error);
  }

  /** Every voice id `step` sends its provider (none when it cannot speak). */
  upstreamIds(step: PlannedStep): string[] {
    const voices = this.byLevel.get(step.level);
    if (!voices || voices instanceof Error) return [];
    const options = voices.options ?? {};
    return [voices.voiceId, ...VOICE_FIELDS.flatMap((f) => f.ids(options))].filter((id) => id !== MIX_ONLY_VOICE);
  }

  /** The same voices on one step only. */
  pinnedTo(step: PlannedStep): VoicePlan {
    return this.narrowedTo([step]);
  }

  /** The same voices on some of its steps only (an async task's steps after its pinned one). */
  narrowedTo(steps: PlannedStep[]): VoicePlan {
    return new VoicePlan(steps, this.byLevel, this.customVoices);
  }

  /** The same voices from `step` on (a stream once its first audio fixed the step: that one first, the later ones if it fails). */
  from(step: PlannedStep): VoicePlan {
    const at = this.steps.indexOf(step);
    return at <= 0 ? this : new VoicePlan(this.steps.slice(at), this.byLevel, this.customVoices);
  }
}
