import { validateEnvironment } from './env.schema';

describe('environment', () => {
  it('applies defaults and converts numbers and booleans', () => {
    const env = validateEnvironment({ PORT: '8080', SVC_DEMO_KEY: 'true', SVC_BREAKER_COOLDOWN_MS: '1500' });
    expect(env.PORT).toBe(8080);
    expect(env.SVC_DEMO_KEY).toBe(true);
    expect(env.SVC_BREAKER_COOLDOWN_MS).toBe(1500);
    expect(env.SVC_BREAKER_THRESHOLD).toBe(5);
    expect(env.SVC_CONFIG).toBe('config/gateway.yaml');
    expect(env.DATABASE_URL).toBeUndefined();
  });

  it.each([
    ['false', false],
    ['0', false],
    ['', false],
    ['TRUE', true],
    ['1', true],
  ])('reads SVC_DEMO_KEY=%j as %s', (raw, expected) => {
    expect(validateEnvironment({ SVC_DEMO_KEY: raw }).SVC_DEMO_KEY).toBe(expected);
  });

  it('refuses a boolean it cannot read', () => {
    expect(() => validateEnvironment({ SVC_DEMO_KEY: 'maybe' })).toThrow(/SVC_DEMO_KEY must be a boolean value/);
  });

  it('stops the boot naming each bad variable', () => {
    expect(() => validateEnvironment({ PORT: 'eighty', DATABASE_URL: 'mysql://x', SVC_ADMIN_TOKEN: 'short' })).toThrow(
      /Invalid environment:\n {2}PORT: .*\n {2}DATABASE_URL: DATABASE_URL must start with postgres:\/\/ or postgresql:\/\/\n {2}SVC_ADMIN_TOKEN: SVC_ADMIN_TOKEN must be at least 16 characters/,
    );
  });

  it('reads the speech settings of its base class, and refuses a bad one', () => {
    expect(validateEnvironment({}).SVC_TASK_PIN_WAIT_MS).toBe(120000);
    expect(validateEnvironment({ SVC_TASK_PIN_WAIT_MS: '1500' }).SVC_TASK_PIN_WAIT_MS).toBe(1500);
    expect(() => validateEnvironment({ SVC_TASK_PIN_WAIT_MS: 'soon' })).toThrow(/SVC_TASK_PIN_WAIT_MS: .*integer/);
    expect(() => validateEnvironment({ SVC_TASK_PIN_WAIT_MS: '-1' })).toThrow(
      /SVC_TASK_PIN_WAIT_MS must not be less than 0/,
    );
  });
});
