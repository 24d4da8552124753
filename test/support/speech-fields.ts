/** The request of the speech-fields specs: valid, with the given extra fields at the top and in voice_setting. */

export const MODEL = 'speech-02-hd';
export const TEXT = 'The optional fields of MiniMax, on every path.';

export const request = (
  voice: string,
  extra: Record<string, unknown> = {},
  voiceExtra: Record<string, unknown> = {},
): Record<string, unknown> => ({
  model: MODEL,
  text: TEXT,
  voice_setting: { voice_id: voice, speed: 1.2, pitch: 2, ...voiceExtra },
  audio_setting: { format: 'mp3', sample_rate: 32000 },
  ...extra,
});
