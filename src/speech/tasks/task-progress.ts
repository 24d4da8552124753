import type { SpeechFormat } from '../../providers/provider-adapter';

/**
 * The share of a task's work that is joining its chunks into one file, by format: encoding the whole clip
 * (mp3, flac) took about a third of a task's time; raw formats only copy bytes.
 */
export const ASSEMBLY_SHARE: Record<SpeechFormat, number> = {
  mp3: 1 / 3,
  flac: 1 / 3,
  opus: 1 / 3,
  wav: 0.05,
  pcm: 0.05,
  pcmu_raw: 0.05,
  pcmu_wav: 0.05,
  // never assembled: no step of an async task makes it (refused before the task is queued)
  aac: 0,
};

/**
 * A task's progress is counted in characters (`characters_done`), assembly included (issue 17.6): each chunk
 * synthesised adds its characters times the synthesis share; each chunk joined into the file brings the count
 * up by its characters times the assembly share; only the completed task reports every character.
 */
export function synthesisProgress(chunkChars: number, format: SpeechFormat): number {
  return Math.floor(chunkChars * (1 - ASSEMBLY_SHARE[format]));
}

/** Progress once `assembledChars` of the text are in the file (every chunk synthesised), below `characters` until completion. */
export function assemblyProgress(characters: number, assembledChars: number, format: SpeechFormat): number {
  const share = ASSEMBLY_SHARE[format];
  const done = Math.floor(characters * (1 - share) + assembledChars * share);
  return Math.max(0, Math.min(characters - 1, done));
}
