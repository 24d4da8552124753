import { DomainError } from '../common/errors/domain-error';
import type { ProviderKind } from '../config/provider-kinds';
import type { PlannedStep } from '../failover/chain';
import { stepsMaking } from './speech-formats';

const step = (provider: string, level: number): PlannedStep =>
  ({
    chainIndex: level,
    level,
    provider,
    model: `${provider}-model`,
    timeoutMs: 1000,
    providerTimeoutMs: 1000,
  }) as PlannedStep;
const kinds: Record<string, ProviderKind> = { espeak: 'espeak', oa: 'openai', mm: 'minimax', oa2: 'openai' };
const kindOf = (provider: string): ProviderKind | undefined => kinds[provider];

describe('which steps can serve a format', () => {
  it('lets every step serve a format the gateway encodes', () => {
    const planned = [step('espeak', 0), step('mm', 1)];
    for (const format of ['mp3', 'opus', 'pcmu_raw', 'pcmu_wav'] as const)
      expect(stepsMaking(format, planned, kindOf)).toBe(planned);
  });

  it('keeps only the steps that make aac, numbered again from the entry step', () => {
    const served = stepsMaking('aac', [step('oa', 0), step('mm', 1), step('oa2', 2)], kindOf);
    expect(served.map((s) => [s.provider, s.level])).toEqual([
      ['oa', 0],
      ['oa2', 1],
    ]);
  });

  it('leaves out an openai step with a realtime model: the Realtime API makes no aac', () => {
    const realtime = { ...step('oa', 0), model: 'gpt-realtime-2.1-mini' };
    const served = stepsMaking('aac', [step('oa2', 0), realtime], kindOf);
    expect(served.map((s) => s.provider)).toEqual(['oa2']);
    expect(() => stepsMaking('aac', [realtime, step('oa2', 1)], kindOf)).toThrow(
      "Steps of this chain that can: oa2 (model 'oa2-model').",
    );
  });

  it('refuses aac when the entry step cannot make it, naming the steps that can', () => {
    const refuse = (planned: PlannedStep[]): DomainError => {
      try {
        stepsMaking('aac', planned, kindOf);
      } catch (err) {
        return err as DomainError;
      }
      throw new Error('not refused');
    };
    const err = refuse([step('espeak', 0), step('oa', 1)]);
    expect(err).toBeInstanceOf(DomainError);
    expect(err).toMatchObject({ code: 'format_not_supported', param: 'audio_setting.format' });
    expect(err.message).toContain("Steps of this chain that can: oa (model 'oa-model').");
    expect(refuse([step('espeak', 0), step('mm', 1)]).message).toContain('No step of this chain can');
  });
});
