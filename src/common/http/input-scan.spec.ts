import { IsObject, ValidateNested } from 'class-validator';
import { Type } from 'class-transformer';
import { arrayForObject, inputProblem, MAX_INPUT_DEPTH } from './input-scan';

const nested = (levels: number): unknown => {
  let value: unknown = 'leaf';
  for (let i = 0; i < levels; i++) value = [value];
  return value;
};

describe('inputProblem', () => {
  it('accepts ordinary input', () => {
    expect(
      inputProblem({ name: 'Ada', chain: [{ provider: 'echo', voice_map: { '*': 'en-us' } }] }, '', true),
    ).toBeNull();
  });

  it('names the field holding a NUL or an unpaired surrogate', () => {
    expect(inputProblem({ chain: [{ model: 'a\u0000b' }] }, '', true)?.toBody().error).toMatchObject({
      code: 'invalid_value',
      param: 'chain[0].model',
    });
    expect(inputProblem({ text: 'a\ud800' }, '', true)?.toBody().error).toMatchObject({
      code: 'invalid_value',
      param: 'text',
    });
    expect(inputProblem('vc_\u0000', 'consent_id', false)?.toBody().error).toMatchObject({ param: 'consent_id' });
    expect(inputProblem({ text: 'a\ud83d\ude00' }, '', true)).toBeNull();
  });

  it('refuses a key the database cannot store, naming its object', () => {
    expect(inputProblem({ voice_map: { 'a\u0000': 'b' } }, '', true)?.toBody().error).toMatchObject({
      param: 'voice_map',
    });
  });

  it('names the top-level field of input nested too deep, without recursing', () => {
    expect(inputProblem({ name: nested(MAX_INPUT_DEPTH - 2) }, '', true)).toBeNull();
    expect(inputProblem({ name: nested(100000) }, '', true)?.toBody().error).toMatchObject({
      code: 'invalid_value',
      param: 'name',
    });
  });

  it('refuses prototype names as unknown fields in validated input only', () => {
    const body = JSON.parse('{"name":"x","voice_setting":{"__proto__":{"polluted":true}}}') as unknown;
    expect(inputProblem(body, '', true)?.toBody().error).toMatchObject({
      code: 'unknown_field',
      param: 'voice_setting.__proto__',
    });
    expect(inputProblem({ toString: 1 }, '', true)?.toBody().error).toMatchObject({
      code: 'unknown_field',
      param: 'toString',
    });
    expect(inputProblem(body, '', false)).toBeNull();
  });
});

class Inner {
  value?: string;
}

class Outer {
  @ValidateNested()
  @Type(() => Inner)
  setting?: Inner;

  @ValidateNested({ each: true })
  @Type(() => Inner)
  list?: Inner[];

  @IsObject()
  free?: Record<string, string>;
}

describe('arrayForObject', () => {
  const outer = (fields: Partial<Outer>): Outer => Object.assign(new Outer(), fields);

  it('finds an array in a property declared as one object', () => {
    expect(arrayForObject(outer({ setting: [] as unknown as Inner }))?.toBody().error).toMatchObject({
      code: 'invalid_value',
      param: 'setting',
    });
  });

  it('leaves arrays declared as arrays, objects and free-form objects alone', () => {
    expect(arrayForObject(outer({ setting: new Inner(), list: [new Inner()], free: { a: 'b' } }))).toBeNull();
  });
});
