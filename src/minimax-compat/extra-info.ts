import { withFlacLength } from '../audio/flac-length';
import { oggOpusSeconds } from '../audio/ogg';
import { parseFlacStreamInfo, parseWavHeader, scanMp3Frames } from '../audio/parse';
import type { SpeechJob } from '../speech/speech-job';
import { characterCount } from '../speech/speech-job';

/** MiniMax's `extra_info` of a T2A answer. */
export interface ExtraInfo {
  /** Milliseconds. */
  audio_length: number;
  audio_sample_rate: number;
  audio_size: number;
  bitrate: number;
  audio_format: string;
  audio_channel: number;
  usage_characters: number;
  word_count: number;
  invisible_character_ratio: number;
}

/** Seconds of `audio` in the job's format, read from the audio itself (0 when it cannot tell). */
export function audioSeconds(audio: Buffer, output: SpeechJob['output']): number {
  try {
    switch (output.format) {
      case 'pcm':
        return audio.length / (2 * output.channels * output.sampleRate);
      case 'wav': {
        const wav = parseWavHeader(audio);
        return wav.dataLength / ((wav.bitsPerSample / 8) * wav.channels * wav.sampleRate);
      }
      case 'mp3':
        return audio.length > 0 ? scanMp3Frames(audio).durationSeconds : 0;
      case 'flac': {
        // a stream encoded live says 0 samples (an answer continued on another step, decisions §7): read from its frames
        const flac = parseFlacStreamInfo(withFlacLength(audio));
        return flac.totalSamples / flac.sampleRate;
      }
      case 'opus':
        return oggOpusSeconds(audio);
      case 'pcmu_raw':
        return audio.length / (output.channels * output.sampleRate);
      case 'pcmu_wav': {
        const wav = parseWavHeader(audio);
        return wav.dataLength / (wav.channels * wav.sampleRate);
      }
      case 'aac':
        return 0;
    }
  } catch {
    return 0;
  }
}

/** `extra_info` of the job's whole clip. */
export function extraInfo(job: SpeechJob, audio: Buffer, bitrate: number): ExtraInfo {
  const words = job.text
    .trim()
    .split(/\s+/)
    .filter((w) => w.length > 0).length;
  const invisible = job.text.match(/[\p{Cc}\p{Cf}]/gu)?.length ?? 0;
  return {
    audio_length: Math.round(audioSeconds(audio, job.output) * 1000),
    audio_sample_rate: job.output.sampleRate,
    audio_size: audio.length,
    bitrate,
    audio_format: job.output.format,
    audio_channel: job.output.channels,
    usage_characters: characterCount(job.text),
    word_count: words,
    invisible_character_ratio: job.text.length > 0 ? Math.round((invisible / job.text.length) * 1000) / 1000 : 0,
  };
}
