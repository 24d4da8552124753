import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** `npm start` (which the benchmarks measure) and the container run the service with the same node flags. */
describe('deployment node flags', () => {
  const root = join(__dirname, '..');
  const startScript = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start;

  it('the Dockerfile CMD runs exactly what package.json start runs', () => {
    const cmd = /^CMD (\[.*\])$/m.exec(readFileSync(join(root, 'Dockerfile'), 'utf8'));
    expect(cmd).not.toBeNull();
    expect((JSON.parse(cmd![1]) as string[]).join(' ')).toBe(startScript);
  });

  it('start passes the heap settings the RSS figures in bench/results.md were measured with', () => {
    expect(startScript).toMatch(/^node (--\S+ )*dist\/src\/main\.js$/);
    expect(startScript).toContain('--max-semi-space-size=8');
    expect(startScript).toContain('--heap-growing-percent=50');
  });
});
