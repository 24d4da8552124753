import { PASS_THROUGH_FORMATS, type AudioFormat, type PassThroughFormat } from '../audio/encoders';
import { DomainError } from '../common/errors/domain-error';
import type { ProviderKind } from '../config/provider-kinds';
import type { PlannedStep } from '../failover/chain';
import { makesPassThrough, PASS_THROUGH_MAKERS } from '../providers/speech-fields';

const isPassThrough = (format: AudioFormat): format is PassThroughFormat => PASS_THROUGH_FORMATS.includes(format);

/**
 * The steps that can serve `format`. Every format the gateway encodes is served by any step; one it only passes
 * through (`aac`) needs a step whose upstream makes it: the entry step must (else 400 `format_not_supported` naming
 * the chain's steps that can), and fallbacks that cannot are left out.
 */
export function stepsMaking(
  format: AudioFormat,
  planned: PlannedStep[],
  kindOf: (provider: string) => ProviderKind | undefined,
): PlannedStep[] {
  if (!isPassThrough(format)) return planned;
  const makers = PASS_THROUGH_MAKERS[format];
  const able = planned.filter((step) => {
    const kind = kindOf(step.provider);
    return kind !== undefined && makesPassThrough(format, kind, step.model);
  });
  if (able.length === 0 || able[0] !== planned[0]) {
    const named = able.map((step) => `${step.provider} (model '${step.model}')`);
    throw new DomainError(
      'format_not_supported',
      `${format} is not encoded by the gateway: only a step of kind ${makers.join(' or ')} with an /audio/speech model (not a realtime one) makes it, and the entry step ` +
        `${planned[0].provider} cannot. ` +
        (named.length > 0
          ? `Steps of this chain that can: ${named.join(', ')}.`
          : `No step of this chain can; ask for opus, mp3, flac, wav or pcm instead.`),
      { param: 'audio_setting.format' },
    );
  }
  return able.map((step, level) => ({ ...step, level }));
}
