import { StartupLogger, startupFailure } from './startup-error';

describe('startupFailure', () => {
  it('is one line for an error without a cause', () => {
    expect(startupFailure(new Error('Cannot read gateway configuration x.yaml: ENOENT'))).toBe(
      'Failed to start: Cannot read gateway configuration x.yaml: ENOENT\n',
    );
  });

  it('adds each cause on a line of its own, and never the stack', () => {
    const root = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5433'), { name: 'Error' });
    const text = startupFailure(
      new Error('the database did not answer', { cause: new TypeError('pool failed', { cause: root }) }),
    );
    expect(text.split('\n').filter(Boolean)).toEqual([
      'Failed to start: the database did not answer',
      '  cause: TypeError: pool failed',
      '  cause: Error: connect ECONNREFUSED 127.0.0.1:5433',
    ]);
    expect(text).not.toMatch(/\n\s+at /);
  });
});

describe('StartupLogger', () => {
  it('keeps only the first line of the last error and drops everything else', () => {
    const logger = new StartupLogger();
    logger.log();
    logger.error('GatewayConfigError: bad\n    at somewhere (file.js:1:1)');
    expect(logger.lastError).toBe('GatewayConfigError: bad');
  });
});
