import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** `npm start` (which the benchmarks measure), `npm run start:prod` and the container run the service with the same node flags. */
describe('deployment node flags', () => {
  const root = join(__dirname, '..');
  const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
    .scripts;
  // `exec`: the shell npm runs the script in becomes node, so npm's forwarded SIGTERM reaches the service
  const startScript = scripts.start.replace(/^exec /, '');

  it('start and start:prod exec node, and the Dockerfile CMD runs exactly that command', () => {
    expect(scripts.start).toMatch(/^exec node /);
    expect(scripts['start:prod']).toBe(scripts.start);
    expect(scripts['prestart:prod']).toBeUndefined();
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
