import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  emotionInstruction,
  HONOURED_FIELDS,
  ignoredBy,
  ignoredFieldsHeader,
  presentFields,
  SPEECH_FIELDS,
} from './speech-fields';

const FULL = {
  pitch: 3,
  instructions: 'Calmly.',
  options: {
    voice_setting: {
      emotion: 'happy' as const,
      text_normalization: true,
      english_normalization: false,
      latex_read: true,
    },
    audio_setting: { force_cbr: true },
    language_boost: 'English' as const,
    pronunciation_dict: { tone: ['omg/oh my god'] },
    timbre_weights: [{ voice_id: 'female-shaonv', weight: 30 }],
    voice_modify: { pitch: 10, sound_effects: 'robotic' as const },
    subtitle_enable: true,
    subtitle_type: 'word' as const,
    continuous_sound: true,
    aigc_watermark: false,
  },
};

describe('which optional speech fields each provider kind honours', () => {
  it('finds every field a request carried, pitch only when it shifts', () => {
    expect(presentFields(FULL)).toEqual([...SPEECH_FIELDS]);
    expect(presentFields({ pitch: 0 })).toEqual([]);
    expect(presentFields({ pitch: 0, options: { aigc_watermark: false } })).toEqual(['aigc_watermark']);
  });

  it('lets a MiniMax step use all of MiniMax fields and names OpenAI instructions as ignored', () => {
    expect(ignoredBy('minimax', FULL)).toEqual(['instructions']);
  });

  it('names what OpenAI, ElevenLabs and the offline engine cannot express', () => {
    expect(
      ignoredBy('openai', { pitch: 2, options: { voice_setting: { emotion: 'sad' }, language_boost: 'auto' } }),
    ).toEqual(['voice_setting.pitch', 'language_boost']);
    expect(
      ignoredBy('elevenlabs', { pitch: 0, options: { voice_setting: { text_normalization: true, latex_read: true } } }),
    ).toEqual(['voice_setting.latex_read']);
    expect(ignoredBy('espeak', { pitch: -4, options: { voice_setting: { emotion: 'angry' } } })).toEqual([
      'voice_setting.emotion',
    ]);
  });

  it('writes the header once per field, and none when nothing was ignored', () => {
    expect(ignoredFieldsHeader(['language_boost', 'output_format', 'language_boost'])).toBe(
      'language_boost, output_format',
    );
    expect(ignoredFieldsHeader([])).toBeNull();
  });

  it('says an emotion to OpenAI in words', () => {
    expect(emotionInstruction('happy')).toBe('Speak in a happy tone.');
    expect(emotionInstruction('whisper')).toBe('Speak in a whisper.');
  });

  it('matches the table of docs/providers.md', () => {
    const doc = readFileSync(join(__dirname, '..', '..', 'docs', 'providers.md'), 'utf8');
    const section = doc.slice(doc.indexOf("## MiniMax's optional speech fields"));
    const kinds = ['minimax', 'openai', 'elevenlabs', 'espeak'] as const;
    for (const field of SPEECH_FIELDS) {
      const row = section.split('\n').find((line) => line.startsWith(`| \`${field}\``));
      expect(row).toBeDefined();
      const cells = (row ?? '')
        .split('|')
        .slice(2, 2 + kinds.length)
        .map((cell) => cell.trim());
      kinds.forEach((kind, i) =>
        expect([field, kind, cells[i].startsWith('yes')]).toEqual([field, kind, HONOURED_FIELDS[kind].includes(field)]),
      );
    }
  });
});
