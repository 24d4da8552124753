import { DomainError } from '../common/errors/domain-error';
import { ERROR_CODES, type ErrorCode } from '../common/errors/error-codes';
import { baseRespOf } from '../speech/stream/stream-replies';
import { baseRespFor, MINIMAX_ERROR_DIALECT } from './minimax-errors';

describe("MiniMax's error codes", () => {
  it.each([
    ['invalid_api_key', 1004],
    ['missing_api_key', 1004],
    ['rate_limited', 1002],
    ['invalid_value', 2013],
    ['voice_not_found', 2013],
    ['all_providers_failed', 1000],
    ['upstream_timeout', 1001],
  ] as const)('answers %s as base_resp %d, the gateway code first in the message', (code, expected) => {
    expect(baseRespFor(new DomainError(code, 'why.'))).toEqual({ status_code: expected, status_msg: `${code}: why.` });
  });

  it('leaves an unknown route to the interface (HTTP 404, as MiniMax answers one)', () => {
    expect(baseRespFor(new DomainError('route_not_found', 'Unknown route.'))).toBeNull();
  });

  it('owns only the MiniMax-native paths, and counts t2a_v2 and voice_design as proxied', () => {
    expect(MINIMAX_ERROR_DIALECT.owns('/v1/t2a_v2')).toBe(true);
    expect(MINIMAX_ERROR_DIALECT.owns('/v1/audio/speech')).toBe(false);
    expect(MINIMAX_ERROR_DIALECT.proxied('/v1/t2a_v2')).toBe(true);
    expect(MINIMAX_ERROR_DIALECT.proxied('/v1/get_voice')).toBe(false);
  });

  it('gives every error the same MiniMax code on the native routes and on the speech WebSocket (one table)', () => {
    for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) {
      const error = new DomainError(code, 'why.');
      // a missing route or method is HTTP on the native routes; a WebSocket message never is one
      expect({ code, status: baseRespOf(error).status_code }).toEqual({
        code,
        status: baseRespFor(error)?.status_code ?? 1000,
      });
    }
  });
});
