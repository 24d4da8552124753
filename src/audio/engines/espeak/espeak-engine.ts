import { setImmediate as nextTurn } from 'node:timers/promises';
import { parseWavHeader } from '../../parse';
import { applyVolume, decodePcm16le, float32ToInt16, int16ToFloat32, resample, toChannels } from '../../pcm';
import { packSentences, splitSentences } from '../../sentences';
import { EspeakRuntime } from './espeak-runtime';
import { ESPEAK_DEFAULT_VOICE } from './espeak-voice';

export { ESPEAK_DEFAULT_VOICE };

export interface EspeakVoice {
  id: string;
  name: string;
  languages: string[];
}

export interface SynthesisOptions {
  /** An id from listVoices(). */
  voice: string;
  /** 0.5..2, 1 = espeak's default 175 words per minute. */
  speed: number;
  /** (0..10], a linear gain; 1 = unchanged. */
  vol: number;
  /** -12..12 semitones. */
  pitch: number;
  sampleRate: number;
  channels: number;
}

/** Interleaved 16-bit audio, exactly at the requested rate and channel count. */
export interface SynthesizedAudio {
  samples: Int16Array;
  sampleRate: number;
  channels: number;
}

export class EspeakVoiceNotFoundError extends Error {
  constructor(readonly voice: string) {
    super(`espeak-ng has no voice "${voice}"`);
    this.name = 'EspeakVoiceNotFoundError';
  }
}

const DEFAULT_WPM = 175;
/** espeak-ng's -s range (words per minute) in this build. */
const MIN_WPM = 80;
const MAX_WPM = 450;
/** Measured on en-us with -P 0: espeak-ng's -p 0..99 spans about −8.7..+9.8 semitones, ~5.3 steps each. */
const PITCH_STEPS_PER_SEMITONE = 5.3;
/** Text per main() run: long enough to amortise espeak-ng's per-run initialisation, short enough to yield often. */
const PIECE_CHARS = 600;
const OUTPUT_PATH = '/speech.wav';

/** -s words per minute for a MiniMax speed (multiplier around the default). */
export function espeakRate(speed: number): number {
  return Math.min(MAX_WPM, Math.max(MIN_WPM, Math.round(DEFAULT_WPM * speed)));
}

/** -p 0..99 for a semitone shift; beyond espeak-ng's reach (about ±9) it saturates at the ends. */
export function espeakPitch(semitones: number): number {
  return Math.min(99, Math.max(0, Math.round(50 + semitones * PITCH_STEPS_PER_SEMITONE)));
}

/** The offline engine (provider kind `espeak`): one warm instance, runs serialised as it is not re-entrant, replaced only if broken. */
export class EspeakEngine {
  private runtime: Promise<EspeakRuntime> | null = null;
  private voices: Promise<Map<string, EspeakVoice & { file: string }>> | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly pieceChars: number;

  constructor(
    private readonly options: {
      pieceChars?: number;
      onStart?: (ms: number) => void;
      onStartFailed?: (err: Error) => void;
    } = {},
  ) {
    this.pieceChars = options.pieceChars ?? PIECE_CHARS;
  }

  /** Starts the instance and reads the voice list now rather than on the first request. */
  async warmUp(): Promise<void> {
    await this.voiceTable();
  }

  async listVoices(): Promise<EspeakVoice[]> {
    const table = await this.voiceTable();
    return [...table.values()].map(({ id, name, languages }) => ({ id, name, languages: [...languages] }));
  }

  async synthesize(text: string, options: SynthesisOptions): Promise<SynthesizedAudio> {
    const parts: Int16Array[] = [];
    for await (const part of this.stream(text, options)) parts.push(part.samples);
    const samples = new Int16Array(parts.reduce((total, part) => total + part.length, 0));
    let offset = 0;
    for (const part of parts) {
      samples.set(part, offset);
      offset += part.length;
    }
    return { samples, sampleRate: options.sampleRate, channels: options.channels };
  }

  /** Audio per group of sentences, so a stream can send the first words early; the parts concatenate to `synthesize`'s audio. */
  async *stream(text: string, options: SynthesisOptions): AsyncGenerator<SynthesizedAudio> {
    const voice = (await this.voiceTable()).get(options.voice);
    if (!voice) throw new EspeakVoiceNotFoundError(options.voice);
    const args = [
      '-b',
      '1',
      '-v',
      voice.file,
      '-s',
      String(espeakRate(options.speed)),
      '-p',
      String(espeakPitch(options.pitch)),
    ];
    for (const piece of packSentences(splitSentences(text, this.pieceChars), this.pieceChars)) {
      const spoken = await this.exclusive((runtime) => {
        const run = runtime.run(['-w', OUTPUT_PATH, ...args, '--', piece], { outputPath: OUTPUT_PATH });
        if (run.status !== 0 || !run.output) {
          throw new Error(`espeak-ng failed (status ${run.status}): ${run.stderr.join(' ') || 'no audio written'}`);
        }
        return run.output;
      });
      yield this.shape(spoken, options);
    }
  }

  /** espeak-ng's WAV (mono, its native 22050 Hz) → requested rate, gain and channel count. */
  private shape(wav: Uint8Array, options: SynthesisOptions): SynthesizedAudio {
    const info = parseWavHeader(wav);
    if (info.bitsPerSample !== 16 || info.channels !== 1) {
      throw new Error(`espeak-ng wrote ${info.bitsPerSample}-bit ${info.channels}-channel audio, expected 16-bit mono`);
    }
    const mono = int16ToFloat32(decodePcm16le(wav.subarray(info.dataOffset, info.dataOffset + info.dataLength)));
    const resampled = resample(mono, info.sampleRate, options.sampleRate);
    const samples = toChannels(
      float32ToInt16(applyVolume(resampled, options.vol, options.sampleRate)),
      options.channels,
    );
    return { samples, sampleRate: options.sampleRate, channels: options.channels };
  }

  private voiceTable(): Promise<Map<string, EspeakVoice & { file: string }>> {
    this.voices ??= this.exclusive((runtime) => {
      const run = runtime.run(['--voices']);
      if (run.status !== 0)
        throw new Error(`espeak-ng --voices failed (status ${run.status}): ${run.stderr.join(' ')}`);
      return parseVoiceList(run.stdout);
    }).catch((error: unknown) => {
      this.voices = null; // let the next caller retry instead of caching the failure
      throw error;
    });
    return this.voices;
  }

  /** Runs `task` alone on a usable instance, after letting queued I/O run (a long text must not starve the server). */
  private exclusive<T>(task: (runtime: EspeakRuntime) => T): Promise<T> {
    const result = this.queue.then(async () => {
      await nextTurn();
      let runtime = await this.currentRuntime();
      if (!runtime.usable) {
        this.runtime = null;
        runtime = await this.currentRuntime();
      }
      return task(runtime);
    });
    this.queue = result.catch(() => undefined);
    return result;
  }

  private currentRuntime(): Promise<EspeakRuntime> {
    if (!this.runtime) {
      const started = performance.now();
      this.runtime = EspeakRuntime.start().then(
        (runtime) => {
          this.options.onStart?.(Math.round(performance.now() - started));
          return runtime;
        },
        (error: unknown) => {
          this.runtime = null;
          this.options.onStartFailed?.(error as Error);
          throw error;
        },
      );
    }
    return this.runtime;
  }
}

/** Parses `espeak-ng --voices`; an id is the language code, or the file name where two voices share one (yue). */
export function parseVoiceList(lines: string[]): Map<string, EspeakVoice & { file: string }> {
  const rows = lines
    .map((line) => /^\s*\d+\s+(\S+)\s+\S+\s+(\S+)\s+(\S+)\s*(.*)$/.exec(line))
    .filter((match): match is RegExpExecArray => match !== null)
    .map(([, language, name, file, others]) => ({
      language,
      name: name.replace(/_/g, ' '),
      file,
      languages: [language, ...[...others.matchAll(/\(([^\s()]+)\s+\d+\)/g)].map((m) => m[1])],
    }));
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(row.language, (counts.get(row.language) ?? 0) + 1);
  const table = new Map<string, EspeakVoice & { file: string }>();
  for (const row of rows) {
    const id = counts.get(row.language) === 1 ? row.language : (row.file.split('/').pop() ?? row.file).toLowerCase();
    table.set(id, { id, name: row.name, languages: [...new Set(row.languages)], file: row.file });
  }
  return table;
}
