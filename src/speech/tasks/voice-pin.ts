import { DomainError, toDomainError } from '../../common/errors/domain-error';
import type { PlannedStep } from '../../failover/chain';

/** The request's `voice_switch`: whether a task may move to another step's voice when its own stays down. */
export const VOICE_SWITCH_POLICIES = ['allowed', 'never'] as const;
export type VoiceSwitchPolicy = (typeof VOICE_SWITCH_POLICIES)[number];

/** The step that speaks every chunk of a task (decisions §7): stored, so a resumed task speaks with it too. */
export interface VoicePin {
  provider: string;
  model: string;
  /** The voice id as that provider knows it (the step's `voice_map`). */
  voice: string;
  level: number;
}

/** One move of a task to another step's voice, as its record lists it. */
export interface VoiceSwitch {
  /** The first chunk spoken with the new voice (0-based, as the chunks are numbered). */
  chunk: number;
  from: { provider: string; voice: string };
  to: { provider: string; voice: string };
  /** Unix seconds. */
  at: number;
  reason: string;
}

/** The first wait after a chunk failed on its pinned step; each later one is twice the one before. */
export const PIN_BACKOFF_START_MS = 1000;

/** The wait before the next attempt on the pinned step: doubling, never past the end of the pin wait. */
export function pinBackoffMs(retry: number, waitedMs: number, pinWaitMs: number): number {
  return Math.max(0, Math.min(PIN_BACKOFF_START_MS * 2 ** retry, pinWaitMs - waitedMs));
}

/** The pinned step among the steps a chunk would walk now (null: the key's chain no longer has it). */
export function pinnedStep(steps: readonly PlannedStep[], pin: VoicePin): PlannedStep | null {
  return steps.find((s) => s.provider === pin.provider && s.model === pin.model && s.level === pin.level) ?? null;
}

/** The steps after the pinned one, in the order they are tried (all of them when the pinned step is gone). */
export function stepsAfter(steps: readonly PlannedStep[], pinned: PlannedStep | null): PlannedStep[] {
  return pinned ? steps.slice(steps.indexOf(pinned) + 1) : [...steps];
}

export const samePin = (a: VoicePin, b: VoicePin): boolean =>
  a.provider === b.provider && a.model === b.model && a.voice === b.voice && a.level === b.level;

/**
 * A chunk's failure that says the step could not speak now (an outage, a cut, an open circuit: what the failover
 * core would have moved on from), as opposed to the request's own fault or the gateway's, which no wait mends.
 */
export function isStepFailure(err: unknown): err is DomainError {
  const domain = toDomainError(err);
  return domain !== null && domain.type === 'upstream_error';
}

export function voiceUnavailable(pin: VoicePin, chunk: number, waitedMs: number, cause: string): DomainError {
  return new DomainError(
    'voice_unavailable',
    `Chunk ${chunk} could not be spoken by ${pin.provider} (voice ${pin.voice})` +
      `${Number.isFinite(waitedMs) ? ` for ${Math.round(waitedMs / 1000)} s` : ''} (${cause}), ` +
      `and the task was created with "voice_switch": "never".`,
  );
}
