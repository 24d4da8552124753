import { assemblyProgress, synthesisProgress } from './task-progress';

describe('task progress counts the assembly of the file (issue 17.6)', () => {
  it('gives synthesis only its share of each chunk, so a task whose chunks are all spoken is not done', () => {
    const chunks = [1200, 1200, 1200];
    const spoken = chunks.reduce((sum, chars) => sum + synthesisProgress(chars, 'mp3'), 0);
    expect(spoken).toBe(2400);
    expect(spoken).toBeLessThan(3600);
  });

  it('brings the count up as chunks are joined, and stays below every character until the task completes', () => {
    expect(assemblyProgress(3600, 0, 'flac')).toBe(2400);
    expect(assemblyProgress(3600, 1200, 'flac')).toBe(2800);
    expect(assemblyProgress(3600, 3600, 'flac')).toBe(3599);
  });

  it('weighs the assembly of raw formats lightly: it only copies bytes', () => {
    expect(synthesisProgress(1000, 'pcm')).toBe(950);
    expect(assemblyProgress(1000, 500, 'wav')).toBe(975);
  });
});
