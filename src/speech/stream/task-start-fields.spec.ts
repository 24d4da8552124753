import { DomainError } from '../../common/errors/domain-error';
import { parseClientMessage } from './stream-messages';

const frame = (message: object): Buffer => Buffer.from(JSON.stringify(message));
const START = { event: 'task_start', model: 'speech-02-hd', voice_setting: { voice_id: 'male-qn-qingse' } };

function refusal(message: object): DomainError {
  try {
    parseClientMessage(frame(message), false);
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
  throw new Error('accepted');
}

describe("task_start accepts MiniMax's optional fields (decisions §7), in MiniMax's ranges", () => {
  it('accepts every optional field a published MiniMax client may send', () => {
    const parsed = parseClientMessage(
      frame({
        ...START,
        voice_setting: {
          voice_id: 'male-qn-qingse',
          speed: 1,
          vol: 1,
          pitch: 0,
          emotion: 'happy',
          text_normalization: false,
          english_normalization: true,
          latex_read: false,
        },
        audio_setting: { sample_rate: 32000, bitrate: 128000, format: 'mp3', channel: 1 },
        stream: true,
        stream_options: { exclude_aggregated_audio: true },
        output_format: 'hex',
        language_boost: 'auto',
        pronunciation_dict: { tone: ['处理/(chu3)(li3)'] },
        timbre_weights: [{ voice_id: 'female-shaonv', weight: 50 }],
        voice_modify: { pitch: 0, intensity: 0, timbre: 0, sound_effects: 'lofi_telephone' },
        subtitle_enable: false,
        subtitle_type: 'word',
        continuous_sound: false,
        aigc_watermark: true,
      }),
      false,
    );
    expect(parsed.event).toBe('task_start');
    if (parsed.event !== 'task_start') return;
    expect(parsed.body).toMatchObject({
      language_boost: 'auto',
      voice_setting: { emotion: 'happy' },
      voice_modify: { sound_effects: 'lofi_telephone' },
    });
  });

  it('refuses out-of-range values with invalid_value naming the field', () => {
    expect(refusal({ ...START, voice_setting: { voice_id: 'x', emotion: 'bored' } })).toMatchObject({
      code: 'invalid_value',
      param: 'voice_setting.emotion',
    });
    expect(refusal({ ...START, voice_modify: { intensity: -101 } })).toMatchObject({
      code: 'invalid_value',
      param: 'voice_modify.intensity',
    });
    expect(refusal({ ...START, timbre_weights: [] })).toMatchObject({ code: 'invalid_value', param: 'timbre_weights' });
  });

  it('still refuses a field MiniMax does not define', () => {
    expect(refusal({ ...START, colour: 'blue' })).toMatchObject({ code: 'unknown_field', param: 'colour' });
    expect(refusal({ ...START, voice_setting: { voice_id: 'x', style: 'calm' } })).toMatchObject({
      code: 'unknown_field',
      param: 'voice_setting.style',
    });
  });
});
