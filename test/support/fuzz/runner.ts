import { connect } from 'node:net';
import { Pool } from 'undici';
import { DomainError } from '../../../src/common/errors/domain-error';
import { ERROR_CODES, ErrorCode } from '../../../src/common/errors/error-codes';
import { baseRespFor } from '../../../src/minimax-compat/minimax-errors';
import type { FuzzCase, FuzzRequest } from './request';

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

const TYPES = new Set(Object.values(ERROR_CODES).map((c) => c.type));

/** Codes whose status is the code's own unless the error says otherwise (a 4xx from a parser, an upstream's status). */
const STATUS_MAY_VARY = new Set(['invalid_value', 'upstream_rejected']);

/** Sends generated requests over a few keep-alive connections; raw ones over a socket of their own. */
export class FuzzClient {
  private readonly pool: Pool;

  constructor(
    private readonly url: string,
    connections: number,
  ) {
    this.pool = new Pool(url, { connections, pipelining: 1, headersTimeout: 60000, bodyTimeout: 60000 });
  }

  async send(request: FuzzRequest): Promise<Answer> {
    if (request.raw) return this.sendRaw(request.raw);
    const res = await this.pool.request({
      method: request.method,
      path: request.path,
      headers: request.headers,
      body: request.body,
    });
    const body = Buffer.from(await res.body.arrayBuffer());
    const headers = Object.fromEntries(
      Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]),
    );
    return { status: res.statusCode, headers, body };
  }

  /** Writes bytes as they are and reads the answer up to the close (the service closes after a refused request). */
  private sendRaw(raw: Buffer): Promise<Answer> {
    const { hostname, port } = new URL(this.url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname);
      const chunks: Buffer[] = [];
      socket.setTimeout(15000, () => socket.destroy(new Error('no answer to a raw request within 15 s')));
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('error', reject);
      socket.on('close', () => {
        const text = Buffer.concat(chunks);
        const end = text.indexOf('\r\n\r\n');
        if (end < 0)
          return reject(
            new Error(`raw request: no HTTP answer (${JSON.stringify(text.toString('latin1').slice(0, 200))})`),
          );
        const [statusLine, ...lines] = text.subarray(0, end).toString('latin1').split('\r\n');
        const headers = Object.fromEntries(
          lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
        );
        resolve({ status: Number(statusLine.split(' ')[1]), headers, body: text.subarray(end + 4) });
      });
      socket.end(raw);
    });
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/**
 * A refusal of a MiniMax-native route (HTTP 200, a non-zero `base_resp`, decisions §10) judged as its
 * interface error would be: the gateway's code leads `status_msg`; undefined for any other answer.
 */
function miniMaxViolation(c: FuzzCase, res: Answer): string | null | undefined {
  if (res.status !== 200 || !/^application\/json/.test(res.headers['content-type'] ?? '')) return undefined;
  let body: { trace_id?: unknown; base_resp?: { status_code?: unknown; status_msg?: unknown } };
  try {
    body = JSON.parse(res.body.toString('utf8')) as typeof body;
  } catch {
    return undefined;
  }
  const baseResp = body.base_resp;
  if (!baseResp || baseResp.status_code === 0) return undefined;
  if (body.trace_id !== res.headers['x-svc-request-id']) return 'a MiniMax error whose trace_id is not the request id';
  const code = /^([a-z_]+): ./.exec(String(baseResp.status_msg))?.[1];
  if (!code || !(code in ERROR_CODES))
    return `a MiniMax error without the gateway's code: ${String(baseResp.status_msg).slice(0, 200)}`;
  const known = ERROR_CODES[code as ErrorCode];
  if (known.status >= 500 && !(known.status === 503 && c.expect.mayBeUnavailable)) return `answered ${code}`;
  const expected = baseRespFor(new DomainError(code as ErrorCode, 'x'))?.status_code;
  if (baseResp.status_code !== expected)
    return `code ${code} as base_resp ${String(baseResp.status_code)} (expected ${String(expected)})`;
  if (code === 'rate_limited') return null;
  if (c.expect.status.length > 0 && !c.expect.status.includes(known.status) && !STATUS_MAY_VARY.has(code))
    return `expected ${c.expect.status.join('/')}, got ${code}`;
  if (c.expect.codes && !c.expect.codes.includes(code)) return `expected code ${c.expect.codes.join('/')}, got ${code}`;
  return null;
}

/** Why an answer breaks the case's expectation, or null. */
export function violation(c: FuzzCase, res: Answer): string | null {
  const { expect } = c;
  if (res.status >= 500 && !(res.status === 503 && expect.mayBeUnavailable)) return `answered ${res.status}`;
  const native = miniMaxViolation(c, res);
  if (native !== undefined) return native;
  if (res.status >= 200 && res.status < 300) return expect.maybeValid ? null : `accepted it with ${res.status}`;
  if (res.status < 400) return `answered ${res.status}`;
  if (!/^application\/json/.test(res.headers['content-type'] ?? ''))
    return `a ${res.status} without a JSON body (${res.headers['content-type'] ?? 'no content type'})`;
  if (!/^req_[0-9A-Za-z]+$/.test(res.headers['x-svc-request-id'] ?? ''))
    return `a ${res.status} without x-svc-request-id`;
  let body: unknown;
  try {
    body = JSON.parse(res.body.toString('utf8'));
  } catch {
    return `a ${res.status} whose body is not JSON`;
  }
  const error = (body as { error?: Record<string, unknown> }).error;
  const keys = error && typeof error === 'object' ? Object.keys(error).sort().join(',') : '';
  if (Object.keys(body as object).join(',') !== 'error' || keys !== 'code,message,param,type')
    return `a body not in the error shape: ${res.body.toString().slice(0, 200)}`;
  const { message, type, param, code } = error as { message: unknown; type: unknown; param: unknown; code: unknown };
  if (typeof message !== 'string' || message.length === 0) return 'an error without a message';
  if (typeof type !== 'string' || !TYPES.has(type as never)) return `an unknown error type ${String(type)}`;
  if (param !== null && typeof param !== 'string') return 'a param that is neither a string nor null';
  if (typeof code !== 'string' || !(code in ERROR_CODES)) return `an unknown error code ${String(code)}`;
  const known = ERROR_CODES[code as keyof typeof ERROR_CODES];
  if (known.type !== type) return `code ${code} with type ${type} (expected ${known.type})`;
  if (known.status !== res.status && !STATUS_MAY_VARY.has(code))
    return `code ${code} with status ${res.status} (expected ${known.status})`;
  if (code === 'rate_limited') return null;
  const got = `${res.status} ${code} param=${JSON.stringify(param)}`;
  if (expect.status.length > 0 && !expect.status.includes(res.status))
    return `expected ${expect.status.join('/')}, got ${got}`;
  if (expect.codes && !expect.codes.includes(code)) return `expected code ${expect.codes.join('/')}, got ${got}`;
  if (expect.param && 'exact' in expect.param && param !== expect.param.exact)
    return `expected param ${JSON.stringify(expect.param.exact)}, got ${got}`;
  if (
    expect.param &&
    'prefix' in expect.param &&
    (typeof param !== 'string' || !param.startsWith(expect.param.prefix))
  ) {
    return `expected a param starting with ${JSON.stringify(expect.param.prefix)}, got ${got}`;
  }
  return null;
}

/** Answers counted by status, and the cases that broke their expectation. */
export class FuzzReport {
  readonly byStatus = new Map<number, number>();
  readonly failures: string[] = [];
  /** 2xx answers per operation (to compare with the rows the run added). */
  readonly accepted = new Map<string, number>();

  record(c: FuzzCase, res: Answer | Error): void {
    if (res instanceof Error) {
      this.failures.push(`${c.op}: ${c.defect}: request failed: ${res.message}`);
      this.byStatus.set(0, (this.byStatus.get(0) ?? 0) + 1);
      return;
    }
    this.byStatus.set(res.status, (this.byStatus.get(res.status) ?? 0) + 1);
    if (res.status >= 200 && res.status < 300) this.accepted.set(c.op, (this.accepted.get(c.op) ?? 0) + 1);
    const problem = violation(c, res);
    if (problem)
      this.failures.push(`${c.op}: ${c.defect}: ${problem} [${c.request.method} ${c.request.path.slice(0, 120)}]`);
  }

  table(): string {
    const total = [...this.byStatus.values()].reduce((a, b) => a + b, 0);
    const rows = [...this.byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, n]) => `  ${status === 0 ? 'error' : status}  ${String(n).padStart(6)}`);
    return [`Answers by status (${total} cases):`, ...rows].join('\n');
  }
}
