import { parseGatewayConfig } from './gateway-config';

const parse = (yaml: string, env: NodeJS.ProcessEnv = {}) => parseGatewayConfig(yaml, 'gw.yaml', env);

const MINIMAX = `providers:
  - name: mm
    kind: minimax
    group_id: "g-shared"
    queue_timeout_ms: 400
    accounts:
      - { name: main, api_key: "\${MM_MAIN}", weight: 3, max_concurrency: 3 }
      - { name: spare, api_key: "\${MM_SPARE}", group_id: 1234567890123456789 }
`;

describe('provider accounts in the gateway configuration (decisions §7)', () => {
  it('interpolates each account key, fills the defaults and inherits the provider group_id', () => {
    const config = parse(MINIMAX, { MM_MAIN: 'key-main', MM_SPARE: 'key-spare' });
    expect(config.provider('mm')).toMatchObject({
      apiKey: null,
      queueTimeoutMs: 400,
      accounts: [
        { name: 'main', apiKey: 'key-main', groupId: 'g-shared', weight: 3, maxConcurrency: 3 },
        { name: 'spare', apiKey: 'key-spare', groupId: '1234567890123456789', weight: 1, maxConcurrency: null },
      ],
    });
    expect(config.warnings).toEqual([]);
  });

  it('leaves out, with a warning, an account whose key interpolates to nothing', () => {
    const config = parse(MINIMAX, { MM_MAIN: 'key-main' });
    expect(config.provider('mm')?.accounts?.map((a) => a.name)).toEqual(['main']);
    expect(config.warnings).toEqual(["account 'spare' of provider 'mm' left out: its api_key is empty"]);
  });

  it('leaves out the provider when every account key is empty', () => {
    const config = parse(MINIMAX, {});
    expect(config.provider('mm')).toBeUndefined();
    expect(config.whyNotConfigured('mm')).toBe('the api_key of every account is empty');
    expect(config.warnings).toContain("provider 'mm' (minimax) left out: the api_key of every account is empty");
  });

  it.each([
    [
      'a duplicate account name',
      'accounts: [{ name: a, api_key: k1 }, { name: a, api_key: k2 }]',
      "providers[0].accounts[1].name: duplicate account name 'a'",
    ],
    [
      'both api_key and accounts',
      'api_key: k0\n    accounts: [{ name: a, api_key: k1 }]',
      'set either api_key or accounts',
    ],
    [
      'a zero weight',
      'accounts: [{ name: a, api_key: k1, weight: 0 }]',
      'accounts[0].weight: weight must be at least 1',
    ],
    [
      'a fractional max_concurrency',
      'accounts: [{ name: a, api_key: k1, max_concurrency: 1.5 }]',
      'accounts[0].max_concurrency: max_concurrency must be a whole number',
    ],
    [
      'an account without a key',
      'accounts: [{ name: a }]',
      'providers[0].accounts[0].api_key: api_key must be a string',
    ],
    ['a bad account name', 'accounts: [{ name: "A b", api_key: k }]', 'accounts[0].name: name must be lowercase'],
    [
      'an unknown account field',
      'accounts: [{ name: a, api_key: k, base_url: "http://h" }]',
      'base_url should not exist',
    ],
    ['an empty list', 'accounts: []', 'accounts must list at least one account'],
    ['a negative queue_timeout_ms', 'api_key: k\n    queue_timeout_ms: -1', 'queue_timeout_ms must not be less than 0'],
  ])('refuses %s with a clear message', (_what, fields, message) => {
    expect(() => parse(`providers:\n  - name: oa\n    kind: openai\n    ${fields}\n`)).toThrow(message);
  });

  it('refuses accounts on a kind without credentials', () => {
    expect(() => parse('providers:\n  - { name: e, kind: echo, accounts: [{ name: a, api_key: k }] }\n')).toThrow(
      'providers[0].accounts: kind echo takes no credentials',
    );
  });

  it('adds nothing to a provider without accounts', () => {
    const config = parse('providers:\n  - { name: oa, kind: openai, api_key: k }\n');
    expect(config.provider('oa')).not.toHaveProperty('accounts');
    expect(config.provider('oa')).not.toHaveProperty('queueTimeoutMs');
  });
});
