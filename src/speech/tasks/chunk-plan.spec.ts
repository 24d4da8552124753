import { packSentences, splitSentences } from '../../audio/sentences';
import { planChunks } from './chunk-plan';

const SENTENCES = [
  'The first sentence is here.',
  'A second one, a little longer than the first!',
  'Is this the third?',
  'Yes.',
];

describe('planChunks', () => {
  it('cuts like splitSentences + packSentences, at sentence boundaries', () => {
    const text = Array.from({ length: 40 }, (_, i) => SENTENCES[i % SENTENCES.length]).join('  ');
    const plan = planChunks(text, 120);
    expect(plan.map((c) => c.text)).toEqual(packSentences(splitSentences(text, 120), 120));
    for (const chunk of plan) {
      expect(chunk.text.length).toBeLessThanOrEqual(120);
      expect(chunk.text).toMatch(/[.!?]$/);
    }
  });

  it('gives every chunk its share of the original text, summing to its length', () => {
    const text = `  ${SENTENCES.join('\n\n')}   ${'word '.repeat(300)}\n`;
    const plan = planChunks(text, 100);
    expect(plan.length).toBeGreaterThan(10);
    expect(plan.reduce((sum, c) => sum + c.chars, 0)).toBe(text.length);
    for (const chunk of plan) expect(chunk.chars).toBeGreaterThanOrEqual(chunk.text.length);
  });

  it('is deterministic and empty for blank text', () => {
    const text = SENTENCES.join(' ').repeat(20);
    expect(planChunks(text)).toEqual(planChunks(text));
    expect(planChunks('   \n ')).toEqual([]);
  });
});
