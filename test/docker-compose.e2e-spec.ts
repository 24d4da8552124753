import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

interface ComposeService {
  environment?: Record<string, string>;
  volumes?: string[];
}

const root = join(__dirname, '..');
const read = (file: string): string => readFileSync(join(root, file), 'utf8');
/** The `${VAR}` names a gateway YAML interpolates (comments left out). */
const interpolated = (yaml: string): string[] => [
  ...new Set([...yaml.replace(/#.*$/gm, '').matchAll(/\$\{([A-Z0-9_]+)\}/g)].map((m) => m[1])),
];

/** The shipped docker-compose.yml runs the gateways with the operator's providers, not only the offline engines. */
describe('docker-compose.yml', () => {
  const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, ComposeService> };
  const gateways = Object.entries(compose.services).filter(([name]) => name.startsWith('gateway-'));

  it('has gateway replicas', () => {
    expect(gateways.length).toBeGreaterThanOrEqual(2);
  });

  it("passes every variable of the providers' YAML to each gateway, empty when unset", () => {
    const wanted = [
      ...interpolated(read('config/gateway.yaml')),
      ...interpolated(read('config/gateway.example.yaml')).filter((name) => /_(API_KEY|GROUP_ID)$/.test(name)),
    ];
    expect(wanted).toEqual(expect.arrayContaining(['OPENAI_API_KEY', 'MINIMAX_API_KEY', 'ANTHROPIC_API_KEY']));
    for (const [, service] of gateways)
      for (const name of new Set(wanted)) expect(service.environment?.[name]).toBe(`\${${name}:-}`);
  });

  it('mounts the gateway YAML it reads, read-only, so an edit needs a restart and no rebuild', () => {
    for (const [, service] of gateways) {
      const config = service.environment?.SVC_CONFIG;
      expect(config).toBe('/app/config/gateway.yaml');
      const mount = (service.volumes ?? [])
        .map((v) => v.split(':'))
        .find((parts) => parts[parts.length - 2] === config);
      expect(mount).toBeDefined();
      expect(mount!.join(':')).toBe('${SVC_CONFIG_FILE:-./config/gateway.yaml}:/app/config/gateway.yaml:ro');
    }
    // the image's working directory is where the mount lands
    expect(read('Dockerfile')).toMatch(/^WORKDIR \/app$/m);
  });
});
