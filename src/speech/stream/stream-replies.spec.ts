import { DomainError } from '../../common/errors/domain-error';
import { ERROR_CODES, ErrorCode } from '../../common/errors/error-codes';
import { baseRespOf, minimaxStatusOf, taskFailed } from './stream-replies';

const error = (code: ErrorCode): DomainError => new DomainError(code, `because ${code}`);

describe('MiniMax status codes of stream errors', () => {
  it.each([
    ['invalid_api_key', 1004],
    ['invalid_ticket', 1004],
    ['key_revoked', 1004],
    ['invalid_value', 2013],
    ['voice_not_found', 2013],
    ['text_too_long', 2013],
    ['rate_limited', 1002],
    ['too_many_streams', 1002],
    ['upstream_timeout', 1001],
    ['all_providers_failed', 1000],
    ['no_provider_available', 1000],
    ['internal_error', 1000],
  ] as Array<[ErrorCode, number]>)('%s → %i', (code, status) => {
    expect(minimaxStatusOf(error(code))).toBe(status);
  });

  it('gives every error code a non-zero MiniMax code (0 means success)', () => {
    for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) expect(minimaxStatusOf(error(code))).toBeGreaterThan(0);
  });

  it('builds task_failed with our error and MiniMax base_resp', () => {
    expect(taskFailed('sess_1', 'req_1', error('key_revoked'))).toEqual({
      event: 'task_failed',
      session_id: 'sess_1',
      trace_id: 'req_1',
      error: { code: 'key_revoked', message: 'because key_revoked' },
      base_resp: { status_code: 1004, status_msg: 'because key_revoked' },
    });
    expect(baseRespOf(error('voice_not_found'))).toEqual({ status_code: 2013, status_msg: 'because voice_not_found' });
  });
});
