import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DomainError } from '../common/errors/domain-error';
import type { ErrorDialect } from '../common/errors/error-dialects';
import { minimaxCodeOf } from '../common/errors/minimax-codes';
import { requestIdOf } from '../common/http/request-id';

/** MiniMax's `base_resp` of a success. */
export const MINIMAX_OK = { status_code: 0, status_msg: 'success' } as const;

export interface BaseResp {
  status_code: number;
  status_msg: string;
}

/** `base_resp` of an error: MiniMax's code, the gateway's message (its own code in front, for support). */
export function baseRespFor(error: DomainError): BaseResp | null {
  const code = minimaxCodeOf(error);
  if (code === null) return null;
  return { status_code: code, status_msg: `${error.code}: ${error.message}` };
}

/** MiniMax puts the trace id in a header as well (its clients quote it in their error messages). */
export const TRACE_HEADER = 'Trace-Id';

/** The paths of the MiniMax-native surface (decisions §10). */
export const MINIMAX_PATHS = {
  t2a: '/v1/t2a_v2',
  t2aAsync: '/v1/t2a_async_v2',
  t2aAsyncQuery: '/v1/query/t2a_async_query_v2',
  filesRetrieve: '/v1/files/retrieve',
  filesUpload: '/v1/files/upload',
  getVoice: '/v1/get_voice',
  voiceClone: '/v1/voice_clone',
  voiceDesign: '/v1/voice_design',
} as const;

const OWNED: ReadonlySet<string> = new Set(Object.values(MINIMAX_PATHS));
const PROXIED: ReadonlySet<string> = new Set([MINIMAX_PATHS.t2a, MINIMAX_PATHS.voiceDesign]);

/** Errors of the MiniMax-native routes as MiniMax answers them: HTTP 200, a non-zero `base_resp.status_code`, the `trace_id`. */
export const MINIMAX_ERROR_DIALECT: ErrorDialect = {
  owns: (path) => OWNED.has(path),
  proxied: (path) => PROXIED.has(path),
  answer(error: DomainError, req: IncomingMessage, res: ServerResponse) {
    const baseResp = baseRespFor(error);
    if (!baseResp) return null;
    const traceId = requestIdOf(req);
    res.setHeader(TRACE_HEADER, traceId);
    return { status: 200, body: { trace_id: traceId, base_resp: baseResp } };
  },
};
