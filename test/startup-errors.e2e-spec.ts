import { spawnService } from './support/process';

/** A start that fails says why in one readable line (plus its causes), not a stack trace. */
describe('start-up errors', () => {
  it.each([
    [
      'a missing gateway file',
      { SVC_CONFIG: '/nonexistent/gateway.yaml' },
      /^Failed to start: Cannot read gateway configuration \/nonexistent\/gateway\.yaml: ENOENT$/,
    ],
    // the variable's problems follow on a line of their own
    [
      'an invalid environment value',
      { SVC_BREAKER_THRESHOLD: 'many' },
      /^Failed to start: Invalid environment:\n {2}SVC_BREAKER_THRESHOLD: /,
    ],
  ])('%s: exit 1 with a readable line, no stack trace', async (_, env, text) => {
    const service = spawnService({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env });
    expect(await service.exited).toBe(1);
    expect(service.output().trim()).toMatch(text);
    expect(service.output().trim().split('\n').length).toBeLessThanOrEqual(2);
    expect(service.output()).not.toMatch(/\n\s+at /);
  });
});
