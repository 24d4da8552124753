import { DomainError } from '../../common/errors/domain-error';
import type { PlannedStep } from '../../failover/chain';
import { isStepFailure, pinBackoffMs, pinnedStep, stepsAfter, voiceUnavailable, type VoicePin } from './voice-pin';

const step = (provider: string, level: number): PlannedStep =>
  ({ provider, level, model: 'speech-02-hd', chainIndex: level }) as PlannedStep;
const steps = [step('a', 0), step('b', 1), step('c', 2)];
const pin = (provider: string, level: number): VoicePin => ({ provider, level, model: 'speech-02-hd', voice: 'v' });

describe('voice pin', () => {
  it('doubles the wait from 1 s, never past the end of the pin wait', () => {
    expect([0, 1, 2, 3].map((retry) => pinBackoffMs(retry, 0, 120000))).toEqual([1000, 2000, 4000, 8000]);
    expect(pinBackoffMs(5, 119000, 120000)).toBe(1000);
    expect(pinBackoffMs(0, 130000, 120000)).toBe(0);
  });

  it('finds the pinned step by provider, model and level, and none once the chain lost it', () => {
    expect(pinnedStep(steps, pin('b', 1))).toBe(steps[1]);
    expect(pinnedStep(steps, pin('b', 2))).toBeNull();
    expect(pinnedStep(steps, { ...pin('a', 0), model: 'other' })).toBeNull();
  });

  it('moves on to the steps after the pinned one, or the whole chain when it is gone', () => {
    expect(stepsAfter(steps, steps[0])).toEqual([steps[1], steps[2]]);
    expect(stepsAfter(steps, steps[2])).toEqual([]);
    expect(stepsAfter(steps, null)).toEqual(steps);
  });

  it("waits for a step's outage, never for the request's or the gateway's own fault", () => {
    expect(isStepFailure(new DomainError('all_providers_failed', 'x'))).toBe(true);
    expect(isStepFailure(new DomainError('no_provider_available', 'x'))).toBe(true);
    expect(isStepFailure(new DomainError('upstream_stream_failed', 'x'))).toBe(true);
    expect(isStepFailure(new DomainError('upstream_rejected', 'x'))).toBe(false);
    expect(isStepFailure(new DomainError('audio_too_long', 'x'))).toBe(false);
    expect(isStepFailure(new Error('a bug'))).toBe(false);
  });

  it('says which step and voice would not speak, and how long it was waited for', () => {
    const waited = voiceUnavailable(pin('a', 0), 3, 120400, 'HTTP 500');
    expect(waited).toMatchObject({ code: 'voice_unavailable', status: 503 });
    expect(waited.message).toBe(
      'Chunk 3 could not be spoken by a (voice v) for 120 s (HTTP 500), and the task was created with "voice_switch": "never".',
    );
    expect(voiceUnavailable(pin('a', 0), 3, Infinity, 'gone').message).not.toMatch(/Infinity/);
  });
});
