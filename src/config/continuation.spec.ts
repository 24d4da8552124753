import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { ChainStepDto } from './chain-step.dto';
import { continuationModes, defaultContinuation } from './continuation';
import { parseGatewayConfig } from './gateway-config';

const parse = (yaml: string) => parseGatewayConfig(yaml, 'gw.yaml', {});
const stepErrors = (continuation: unknown): string[] =>
  validateSync(plainToInstance(ChainStepDto, { provider: 'oa', model: 'm', continuation })).flatMap((e) =>
    Object.values(e.constraints ?? {}),
  );

describe('the continuation setting (decisions §3)', () => {
  it('defaults to prefill then restart for anthropic, restart for every other kind', () => {
    expect(defaultContinuation('anthropic')).toEqual(['prefill', 'restart']);
    expect(defaultContinuation('openai')).toEqual(['restart']);
    expect(defaultContinuation('echo')).toEqual(['restart']);
  });

  it("takes a step's list over its provider's, and the provider's over the kind's; none is no mode", () => {
    const provider = { kind: 'anthropic' as const, continuation: ['restart' as const] };
    expect(continuationModes({}, { kind: 'anthropic' })).toEqual(['prefill', 'restart']);
    expect(continuationModes({}, provider)).toEqual(['restart']);
    expect(continuationModes({ continuation: ['prefill'] }, provider)).toEqual(['prefill']);
    expect(continuationModes({ continuation: ['none'] }, provider)).toEqual([]);
  });

  it("reads a provider's continuation from the YAML, and leaves it unset otherwise", () => {
    const config = parse(
      'providers:\n  - { name: oa, kind: openai, api_key: k, continuation: [prefill, restart] }\n  - { name: b, kind: openai, api_key: k }\n',
    );
    expect(config.provider('oa')?.continuation).toEqual(['prefill', 'restart']);
    expect(config.provider('b')).not.toHaveProperty('continuation');
  });

  it.each([
    ['an unknown mode', '[resume]'],
    ['an empty list', '[]'],
    ['a repeated mode', '[restart, restart]'],
    ['none with another mode', '[none, restart]'],
    ['a single string', 'restart'],
  ])('fails the boot on %s, naming the field', (_what, value) => {
    expect(() => parse(`providers:\n  - { name: oa, kind: openai, api_key: k, continuation: ${value} }\n`)).toThrow(
      /gw\.yaml: providers\[0\]\.continuation: continuation must be a non-empty list of prefill, restart, none/,
    );
  });

  it('validates a chain step the same way (gateway.yaml keys and the admin API)', () => {
    expect(stepErrors(['prefill', 'restart'])).toEqual([]);
    expect(stepErrors(['none'])).toEqual([]);
    expect(stepErrors(['restart', 'none'])).toEqual([
      'continuation must be a non-empty list of prefill, restart, none without repeats; none stands alone',
    ]);
  });
});
