import { validateEnvironment } from '../../config/env.schema';

describe('SVC_TASK_TTL', () => {
  it('defaults to 24 hours and reads seconds or a duration with a unit', () => {
    expect(validateEnvironment({}).SVC_TASK_TTL).toBe(86400);
    expect(validateEnvironment({ SVC_TASK_TTL: '3600' }).SVC_TASK_TTL).toBe(3600);
    expect(validateEnvironment({ SVC_TASK_TTL: '90s' }).SVC_TASK_TTL).toBe(90);
    expect(validateEnvironment({ SVC_TASK_TTL: '30m' }).SVC_TASK_TTL).toBe(1800);
    expect(validateEnvironment({ SVC_TASK_TTL: '24h' }).SVC_TASK_TTL).toBe(86400);
    expect(validateEnvironment({ SVC_TASK_TTL: '7d' }).SVC_TASK_TTL).toBe(604800);
  });

  it('stops the boot on anything else', () => {
    expect(() => validateEnvironment({ SVC_TASK_TTL: 'a day' })).toThrow(
      /SVC_TASK_TTL: .*SVC_TASK_TTL must be seconds or a duration like 90s, 30m, 24h, 7d/,
    );
    expect(() => validateEnvironment({ SVC_TASK_TTL: '0' })).toThrow(/SVC_TASK_TTL/);
    expect(() => validateEnvironment({ SVC_TASK_TTL: '1.5h' })).toThrow(/SVC_TASK_TTL/);
  });
});
