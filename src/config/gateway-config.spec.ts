import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GatewayConfigError, loadGatewayConfig, parseGatewayConfig } from './gateway-config';

const parse = (yaml: string, env: NodeJS.ProcessEnv = {}) => parseGatewayConfig(yaml, 'gw.yaml', env);

describe('gateway configuration', () => {
  it('fills in vendor defaults and capabilities', () => {
    const config = parse('providers:\n  - { name: oa, kind: openai, api_key: sk-1 }\n  - { name: e, kind: echo }\n');
    expect(config.provider('oa')).toEqual({
      name: 'oa',
      kind: 'openai',
      baseUrl: 'https://api.openai.com/v1',
      apiKey: 'sk-1',
      groupId: null,
      timeoutMs: null,
      capabilities: ['chat', 'speech'],
    });
    expect(config.provider('e')?.capabilities).toEqual(['chat']);
  });

  it('interpolates ${ENV} and leaves out a provider whose api_key is empty, with a warning', () => {
    const yaml =
      'providers:\n  - { name: mm, kind: minimax, api_key: "${MM_KEY}", base_url: "${MM_URL}" }\n  - { name: oa, kind: openai, api_key: "${OA_KEY}" }\n';
    const config = parse(yaml, { MM_KEY: 'k', MM_URL: 'http://127.0.0.1:9/v1/' });
    expect(config.providers.map((p) => p.name)).toEqual(['mm']);
    expect(config.provider('mm')?.baseUrl).toBe('http://127.0.0.1:9/v1');
    expect(config.warnings).toEqual(["provider 'oa' (openai) left out: its api_key is empty"]);
  });

  it.each([
    [
      'a wrong kind',
      'providers:\n  - { name: x, kind: nope }\n',
      /gw\.yaml: providers\[0\]\.kind: kind must be one of openai, anthropic/,
    ],
    [
      'a bad base_url',
      'providers:\n  - { name: x, kind: openai, api_key: k, base_url: "ftp://h" }\n',
      /providers\[0\]\.base_url: base_url must be an http\(s\) URL/,
    ],
    [
      'an unknown field',
      'providers:\n  - { name: x, kind: echo, colour: red }\n',
      /providers\[0\]\.colour: property colour should not exist/,
    ],
    [
      'a duplicate name',
      'providers:\n  - { name: x, kind: echo }\n  - { name: x, kind: espeak }\n',
      /providers\[1\]\.name: duplicate provider name 'x'/,
    ],
    [
      'a capability the kind lacks',
      'providers:\n  - { name: x, kind: echo, capabilities: [speech] }\n',
      /providers\[0\]\.capabilities: kind echo cannot serve speech/,
    ],
    ['no providers list', 'keys: []\n', /gw\.yaml: providers: /],
    ['invalid YAML', 'providers: [\n', /gw\.yaml: not valid YAML/],
    [
      'a key chain naming an undeclared provider',
      'providers:\n  - { name: e, kind: echo }\nkeys:\n  - { name: k, secret: sk-svc-0123456789abcdef0123456789abcdef, chain: [{ provider: ghost, model: m }] }\n',
      /keys\[0\]\.chain\[0\]\.provider: no provider named 'ghost'/,
    ],
    [
      'a bootstrap key with an empty chain',
      'providers:\n  - { name: e, kind: echo }\nkeys:\n  - { name: k, secret: sk-svc-0123456789abcdef0123456789abcdef, chain: [] }\n',
      /gw\.yaml: keys\[0\]\.chain: chain must have at least one step$/,
    ],
    [
      'a weak bootstrap secret',
      'providers: []\nkeys:\n  - { name: k, secret: short, chain: [] }\n',
      /keys\[0\]\.secret: secret must be sk-svc-/,
    ],
  ])('stops with a message naming the file, the field and the problem for %s', (_, yaml, message) => {
    expect(() => parse(yaml)).toThrow(GatewayConfigError);
    expect(() => parse(yaml)).toThrow(message);
  });

  it('drops chain steps of left-out providers from bootstrap keys, with a warning', () => {
    const yaml =
      'providers:\n  - { name: oa, kind: openai, api_key: "" }\n  - { name: e, kind: echo }\nkeys:\n  - { name: k, secret: sk-svc-0123456789abcdef0123456789abcdef, chain: [{ provider: oa, model: gpt }, { provider: e, model: echo-1 }] }\n';
    const config = parse(yaml);
    expect(config.bootstrapKeys[0].chain.map((s) => s.provider)).toEqual(['e']);
    expect(config.warnings).toContain("key 'k': chain[0] (oa) dropped from its chain: the provider is left out");
  });

  it('remembers why a left-out provider is not configured, for the chain steps that name it', () => {
    const config = parse(
      'providers:\n  - { name: mm, kind: minimax, api_key: "${UNSET_KEY}" }\n  - { name: e, kind: espeak }\n',
    );
    expect(config.leftOut).toEqual([{ name: 'mm', kind: 'minimax', reason: 'its api_key is empty' }]);
    expect(config.whyNotConfigured('mm')).toBe('its api_key is empty');
    expect(config.whyNotConfigured('gone')).toBe('it is not in the gateway configuration');
    expect(config.whyNotConfigured('e')).toBeNull();
  });

  it('leaves out, with a warning, a bootstrap key whose every step is a left-out provider', () => {
    const yaml =
      'providers:\n  - { name: oa, kind: openai, api_key: "" }\n  - { name: e, kind: echo }\nkeys:\n  - { name: k, secret: sk-svc-0123456789abcdef0123456789abcdef, chain: [{ provider: oa, model: gpt }] }\n';
    const config = parse(yaml);
    expect(config.bootstrapKeys).toEqual([]);
    expect(config.warnings).toContain("key 'k' left out: every step of its chain names a left-out provider");
  });

  it("takes a provider's stream_idle_timeout_ms (100 ms to 1 h), and leaves the adapters' default when it is unset", () => {
    const config = parse(
      'providers:\n  - { name: oa, kind: openai, api_key: k, stream_idle_timeout_ms: 1500 }\n  - { name: mm, kind: minimax, api_key: k }\n',
    );
    expect(config.provider('oa')?.streamIdleTimeoutMs).toBe(1500);
    expect(config.provider('mm')?.streamIdleTimeoutMs).toBeUndefined();
    expect(() => parse('providers:\n  - { name: oa, kind: openai, api_key: k, stream_idle_timeout_ms: 50 }\n')).toThrow(
      /providers\[0\]\.stream_idle_timeout_ms/,
    );
  });

  it("takes a provider's conduct settings (decisions §2) and refuses one out of range with a clear message", () => {
    const config = parse(
      'providers:\n  - { name: oa, kind: openai, api_key: k, retries: 0, retry_after_max_ms: 2000, first_token_timeout_ms: 4000 }\n',
    );
    expect(config.provider('oa')).toMatchObject({ retries: 0, retryAfterMaxMs: 2000, firstTokenTimeoutMs: 4000 });
    expect(() => parse('providers:\n  - { name: oa, kind: openai, api_key: k, retries: 6 }\n')).toThrow(
      'providers[0].retries: retries must be at most 5',
    );
    expect(() =>
      parse('providers:\n  - { name: oa, kind: openai, api_key: k, first_token_timeout_ms: 1.5 }\n'),
    ).toThrow(/providers\[0\]\.first_token_timeout_ms: first_token_timeout_ms must be a whole number/);
  });

  it('names the file it cannot read', () => {
    expect(() => loadGatewayConfig('/nonexistent/gateway.yaml')).toThrow(
      'Cannot read gateway configuration /nonexistent/gateway.yaml: ENOENT',
    );
  });

  it('loads the shipped default and example configurations', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-'));
    writeFileSync(join(dir, 'g.yaml'), 'providers:\n  - { name: e, kind: echo }\n');
    expect(loadGatewayConfig(join(dir, 'g.yaml')).providers).toHaveLength(1);
    const shipped = loadGatewayConfig('config/gateway.yaml', {});
    expect(shipped.providers.map((p) => p.kind).sort()).toEqual(['echo', 'espeak']);
    const example = loadGatewayConfig('config/gateway.example.yaml', {
      OPENAI_API_KEY: 'a',
      ANTHROPIC_API_KEY: 'b',
      MINIMAX_API_KEY: 'c',
      MINIMAX_GROUP_ID: '1234567890123456789',
      ELEVENLABS_API_KEY: 'd',
    });
    expect(example.provider('minimax')?.groupId).toBe('1234567890123456789');
    expect(example.providers.map((p) => p.kind).sort()).toEqual([
      'anthropic',
      'echo',
      'elevenlabs',
      'espeak',
      'minimax',
      'openai',
    ]);
  });

  describe('numeric-looking ids stay strings', () => {
    const GROUP_ID = '1234567890123456789'; // 19 digits: as a JS number it would round to ...6800

    it.each([
      ['interpolated unquoted', 'group_id: ${GID}'],
      ['interpolated quoted (the shipped files)', 'group_id: "${GID}"'],
      ['written unquoted', `group_id: ${GROUP_ID}`],
      ['written quoted', `group_id: '${GROUP_ID}'`],
    ])('keeps a 19-digit GroupId exactly, %s', (_label, field) => {
      const config = parse(`providers:\n  - name: mm\n    kind: minimax\n    api_key: k\n    ${field}\n`, {
        GID: GROUP_ID,
      });
      expect(config.provider('mm')?.groupId).toBe(GROUP_ID);
    });

    it('keeps the digits of every string field: a key, a name, a model, voice ids, a voice map', () => {
      const yaml = [
        'providers:',
        '  - { name: mm, kind: minimax, api_key: 0012, group_id: 1.50, allowed_voice_ids: [007, ${VOICE}] }',
        'keys:',
        '  - name: 2024',
        '    secret: sk-svc-0123456789abcdefghijABCDEFGHIJ01',
        '    chain: [{ provider: mm, model: 02, voice_map: { "*": 99999999999999999999 } }]',
      ].join('\n');
      const config = parse(yaml, { VOICE: '42' });
      expect(config.provider('mm')).toMatchObject({ apiKey: '0012', groupId: '1.50', allowedVoiceIds: ['007', '42'] });
      expect(config.bootstrapKeys[0].name).toBe('2024');
      expect(config.bootstrapKeys[0].chain[0]).toMatchObject({
        model: '02',
        voice_map: { '*': '99999999999999999999' },
      });
    });

    it('still reads a number where a number is meant, interpolated or written', () => {
      const config = parse('providers:\n  - { name: e, kind: echo, timeout_ms: ${T}, stream_idle_timeout_ms: 900 }\n', {
        T: '5000',
      });
      expect(config.provider('e')).toMatchObject({ timeoutMs: 5000, streamIdleTimeoutMs: 900 });
    });

    it('interpolates a value as data, never as YAML: a # or ": " in a secret stays in it', () => {
      const config = parse('providers:\n  - { name: oa, kind: openai, api_key: ${KEY} }\n', { KEY: 'sk-a#b: c' });
      expect(config.provider('oa')?.apiKey).toBe('sk-a#b: c');
    });

    it('treats an unset GroupId as none, quoted or not', () => {
      for (const field of ['group_id: ${GID}', 'group_id: "${GID}"'])
        expect(
          parse(`providers:\n  - { name: mm, kind: minimax, api_key: k, ${field} }\n`).provider('mm')?.groupId,
        ).toBeNull();
    });
  });
});
