import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KIND_TRAITS } from './provider-kinds';
import { isRetired, RETIRED_MODELS, type RetiredModel } from './retired-models';

const root = join(__dirname, '..', '..');
const read = (path: string): string => readFileSync(join(root, path), 'utf8');

/** Every `example` value of the OpenAPI document, as text. */
function openApiExamples(document: unknown): string[] {
  const found: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'example' || key === 'examples') found.push(JSON.stringify(value));
      else walk(value);
    }
  };
  walk(document);
  return found;
}

/** The places a user copies model names from: configs, the README, the demo chain, the OpenAPI examples. */
function userFacingSources(): Array<[where: string, text: string]> {
  return [
    ['config/gateway.example.yaml', read('config/gateway.example.yaml')],
    ['config/gateway.yaml', read('config/gateway.yaml')],
    ['README.md', read('README.md')],
    [
      'the demo chain (KIND_TRAITS.defaultModels)',
      JSON.stringify(Object.values(KIND_TRAITS).map((k) => k.defaultModels)),
    ],
    ['openapi/openapi.json examples', openApiExamples(JSON.parse(read('openapi/openapi.json'))).join('\n')],
  ];
}

/** `id` as a whole model name: not part of a longer one (`gpt-4o` in `gpt-4o-mini-tts` is not `gpt-4o`). */
const names = (text: string, id: string): boolean =>
  new RegExp(`(?<![\\w.-])${id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w.-])`).test(text);

function violations(today: Date, sources = userFacingSources()): string[] {
  const out: string[] = [];
  for (const [where, text] of sources)
    for (const model of RETIRED_MODELS)
      if (isRetired(model, today) && names(text, model.id))
        out.push(`${where} names ${model.id} (shut down ${model.shutdown}; use ${model.replacement})`);
  return out;
}

describe('retired models', () => {
  it('names no model past its shutdown (or a chat model within 60 days of it) in a config, the README, the demo or an OpenAPI example', () => {
    expect(violations(new Date())).toEqual([]);
    // and still none past every shutdown announced: nothing user-facing waits for a date to become wrong
    expect(violations(new Date('2027-02-01T00:00:00Z'))).toEqual([]);
  });

  it('names no OpenAI /audio/speech model in the demo chain: its speech step is a realtime model', () => {
    const speech = RETIRED_MODELS.filter((model) => model.use === 'speech').map((model) => model.id);
    expect(speech).not.toContain(KIND_TRAITS.openai.defaultModels.speech);
    expect(KIND_TRAITS.openai.defaultModels.speech).toBe('gpt-realtime-2.1-mini');
  });

  it('names an OpenAI /audio/speech model only while docs/providers.md says what replaces it', () => {
    const speech = RETIRED_MODELS.filter((model) => model.use === 'speech');
    const named = speech.filter((model) => userFacingSources().some(([, text]) => names(text, model.id)));
    if (named.length === 0) return;
    const providers = read('docs/providers.md');
    for (const model of named) {
      expect(providers).toContain(`## OpenAI speech after ${model.shutdown}`);
      expect(providers).toContain(model.replacement.split(' ')[0]);
    }
  });

  it('catches a retired name: the rule itself', () => {
    const haiku = RETIRED_MODELS.find((m) => m.id === 'claude-3-5-haiku-latest') as RetiredModel;
    const tts = RETIRED_MODELS.find((m) => m.id === 'gpt-4o-mini-tts') as RetiredModel;
    const today = new Date('2026-12-01T12:00:00Z');
    expect(isRetired(haiku, today)).toBe(true);
    // gpt-4o-mini (2027-01-14) is within the 60 days of notice; the speech model is kept until its day
    expect(isRetired(RETIRED_MODELS.find((m) => m.id === 'gpt-4o-mini') as RetiredModel, today)).toBe(true);
    expect(isRetired(tts, today)).toBe(false);
    expect(isRetired(tts, new Date('2027-01-06T00:00:00Z'))).toBe(true);
    const yaml =
      '- { provider: anthropic, model: claude-3-5-haiku-latest }\n- { provider: openai, model: gpt-4o-mini-tts }';
    expect(violations(today, [['a config', yaml]])).toEqual([
      'a config names claude-3-5-haiku-latest (shut down 2026-02-19; use claude-haiku-4-5)',
    ]);
    // a longer, current name that starts with a retired one is not a match
    expect(violations(today, [['a config', 'model: gpt-4o-mini-tts, model: gpt-5.4-mini']])).toEqual([]);
    expect(violations(today, [['a config', 'model: gpt-realtime-2.1-mini']])).toEqual([]);
    // a deprecated realtime model is out within the 60 days before its shutdown, as a chat model is
    expect(violations(today, [['a config', 'model: gpt-realtime-mini']])).toEqual([
      'a config names gpt-realtime-mini (shut down 2027-01-20; use gpt-realtime-2.1-mini)',
    ]);
  });
});
