import { ValidateBy, ValidationOptions } from 'class-validator';
import type { ProviderKind } from './provider-kinds';

/**
 * How a step may continue a stream that broke after its first byte on an earlier step (decisions §3):
 * `prefill` (the delivered text as a trailing assistant turn, its output appended), `restart` (the request again,
 * its output checked against the delivered text), `none` (this step does not continue streams).
 */
export const CONTINUATION_MODES = ['prefill', 'restart', 'none'] as const;
export type ContinuationMode = (typeof CONTINUATION_MODES)[number];
/** The modes that do continue a stream. */
export type ContinuingMode = Exclude<ContinuationMode, 'none'>;

/** The modes of a step without a `continuation` of its own or of its provider: prefill first where the kind takes it. */
export function defaultContinuation(kind: ProviderKind): ContinuationMode[] {
  return kind === 'anthropic' ? ['prefill', 'restart'] : ['restart'];
}

/** The modes to try, in order: the step's own list, else the provider's, else the kind's default; `none` is none. */
export function continuationModes(
  step: { continuation?: ContinuationMode[] },
  provider: { kind: ProviderKind; continuation?: ContinuationMode[] },
): ContinuingMode[] {
  const modes = step.continuation ?? provider.continuation ?? defaultContinuation(provider.kind);
  return modes.filter((mode): mode is ContinuingMode => mode !== 'none');
}

const MESSAGE = `$property must be a non-empty list of ${CONTINUATION_MODES.join(', ')} without repeats; none stands alone`;

/** A `continuation` list: known modes, at least one, no repeats, `none` only on its own. */
export const IsContinuation = (options?: ValidationOptions): PropertyDecorator =>
  ValidateBy(
    {
      name: 'isContinuation',
      validator: {
        validate: (value: unknown) =>
          Array.isArray(value) &&
          value.length > 0 &&
          value.every((mode) => (CONTINUATION_MODES as readonly unknown[]).includes(mode)) &&
          new Set(value).size === value.length &&
          (value.length === 1 || !value.includes('none')),
        defaultMessage: () => MESSAGE,
      },
    },
    options,
  );
