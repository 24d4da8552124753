import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type AttributeValue = string | number | boolean | null;

/** One exported span, the same whichever OTLP encoding carried it (ids in lowercase hex). */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, AttributeValue>;
  events: Array<{ name: string; attributes: Record<string, AttributeValue> }>;
  links: Array<{ traceId: string; spanId: string }>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  resource: Record<string, AttributeValue>;
}

export const SPAN_KIND = { server: 2, client: 3, consumer: 5 } as const;

/** A protobuf message's fields in wire order: number → values (varints as bigint, length-delimited as bytes). */
type Fields = Map<number, Array<bigint | Buffer>>;

/** The wire format itself (varint, 64-bit, length-delimited, 32-bit): enough for OTLP's trace request. */
function fieldsOf(buf: Buffer): Fields {
  const fields: Fields = new Map();
  let at = 0;
  const varint = (): bigint => {
    let value = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buf[at++];
      value |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return value;
      shift += 7n;
    }
  };
  while (at < buf.length) {
    const tag = Number(varint());
    const [field, wire] = [tag >>> 3, tag & 7];
    let value: bigint | Buffer;
    if (wire === 0) value = varint();
    else if (wire === 1) value = buf.subarray(at, (at += 8));
    else if (wire === 2) {
      const length = Number(varint());
      value = buf.subarray(at, (at += length));
    } else if (wire === 5) value = buf.subarray(at, (at += 4));
    else throw new Error(`unexpected protobuf wire type ${wire}`);
    fields.set(field, [...(fields.get(field) ?? []), value]);
  }
  return fields;
}

const bytes = (f: Fields, n: number): Buffer[] => (f.get(n) ?? []).filter((v): v is Buffer => Buffer.isBuffer(v));
const one = (f: Fields, n: number): Buffer => bytes(f, n)[0] ?? Buffer.alloc(0);
const num = (f: Fields, n: number): number => Number((f.get(n) ?? []).find((v) => typeof v === 'bigint') ?? 0n);

function anyValueOf(f: Fields): AttributeValue {
  if (f.has(1)) return one(f, 1).toString('utf8');
  if (f.has(2)) return num(f, 2) !== 0;
  if (f.has(3)) return num(f, 3);
  if (f.has(4)) return one(f, 4).readDoubleLE(0);
  return null;
}

const protoAttributes = (list: Buffer[]): Record<string, AttributeValue> =>
  Object.fromEntries(
    list.map((kv) => {
      const f = fieldsOf(kv);
      return [one(f, 1).toString('utf8'), anyValueOf(fieldsOf(one(f, 2)))];
    }),
  );

/** ExportTraceServiceRequest (opentelemetry/proto/collector/trace/v1) in protobuf. */
export function decodeProtobuf(body: Buffer): ReceivedSpan[] {
  return bytes(fieldsOf(body), 1).flatMap((resourceSpans) => {
    const rs = fieldsOf(resourceSpans);
    const resource = protoAttributes(bytes(fieldsOf(one(rs, 1)), 1));
    return bytes(rs, 2).flatMap((scopeSpans) =>
      bytes(fieldsOf(scopeSpans), 2).map((raw) => {
        const s = fieldsOf(raw);
        return {
          traceId: one(s, 1).toString('hex'),
          spanId: one(s, 2).toString('hex'),
          parentSpanId: one(s, 4).toString('hex'),
          name: one(s, 5).toString('utf8'),
          kind: num(s, 6),
          attributes: protoAttributes(bytes(s, 9)),
          events: bytes(s, 11).map((e) => {
            const ef = fieldsOf(e);
            return { name: one(ef, 2).toString('utf8'), attributes: protoAttributes(bytes(ef, 3)) };
          }),
          links: bytes(s, 13).map((l) => {
            const lf = fieldsOf(l);
            return { traceId: one(lf, 1).toString('hex'), spanId: one(lf, 2).toString('hex') };
          }),
          statusCode: num(fieldsOf(one(s, 15)), 3),
          resource,
        };
      }),
    );
  });
}

interface JsonKeyValue {
  key: string;
  value: { stringValue?: string; boolValue?: boolean; intValue?: number | string; doubleValue?: number };
}
const jsonAttributes = (list: JsonKeyValue[] = []): Record<string, AttributeValue> =>
  Object.fromEntries(
    list.map(({ key, value }) => [
      key,
      value.stringValue ??
        value.boolValue ??
        (value.intValue !== undefined ? Number(value.intValue) : undefined) ??
        value.doubleValue ??
        null,
    ]),
  );

interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: JsonKeyValue[];
  events?: Array<{ name: string; attributes?: JsonKeyValue[] }>;
  links?: Array<{ traceId: string; spanId: string }>;
  status?: { code?: number };
}

/** The same request in OTLP/JSON (ids as hex, as the JavaScript exporter writes them). */
export function decodeJson(body: Buffer): ReceivedSpan[] {
  const request = JSON.parse(body.toString('utf8')) as {
    resourceSpans: Array<{ resource?: { attributes?: JsonKeyValue[] }; scopeSpans: Array<{ spans: JsonSpan[] }> }>;
  };
  return request.resourceSpans.flatMap((rs) =>
    rs.scopeSpans.flatMap((ss) =>
      ss.spans.map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind,
        attributes: jsonAttributes(s.attributes),
        events: (s.events ?? []).map((e) => ({ name: e.name, attributes: jsonAttributes(e.attributes) })),
        links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
        statusCode: s.status?.code ?? 0,
        resource: jsonAttributes(rs.resource?.attributes),
      })),
    ),
  );
}

/** How many spans a protobuf export holds, read three levels deep only (a benchmark's receiver counts, never decodes). */
export function countProtobufSpans(body: Buffer): number {
  let n = 0;
  for (const resourceSpans of bytes(fieldsOf(body), 1))
    for (const scopeSpans of bytes(fieldsOf(resourceSpans), 2)) n += bytes(fieldsOf(scopeSpans), 2).length;
  return n;
}

/**
 * A collector on 127.0.0.1 that takes `POST /v1/traces` in either encoding and keeps every span; with `countOnly`
 * it only counts them (protobuf, for a benchmark).
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Spans received (counted in either mode). */
  received = 0;
  private countOnly = false;
  /** The content types the exports came in. */
  readonly contentTypes = new Set<string>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(options: { countOnly?: boolean } = {}): Promise<OtlpReceiver> {
    let receiver: OtlpReceiver | null = null;
    const server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (chunk: Buffer) => parts.push(chunk));
      req.on('end', () => {
        receiver?.take(req.url ?? '', req.headers, Buffer.concat(parts));
        res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' });
        res.end(req.headers['content-type'] === 'application/json' ? '{}' : '');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new OtlpReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    receiver.countOnly = options.countOnly ?? false;
    return receiver;
  }

  private take(path: string, headers: IncomingHttpHeaders, body: Buffer): void {
    if (path !== '/v1/traces') return;
    const type = headers['content-type'] ?? '';
    this.contentTypes.add(type);
    if (this.countOnly && type !== 'application/json') {
      this.received += countProtobufSpans(body);
      return;
    }
    const spans = type === 'application/json' ? decodeJson(body) : decodeProtobuf(body);
    this.received += spans.length;
    if (!this.countOnly) this.spans.push(...spans);
  }

  /** The spans that `match` picks, once there are at least `n` of them. */
  async waitFor(match: (span: ReceivedSpan) => boolean, n = 1, timeoutMs = 10000): Promise<ReceivedSpan[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.spans.filter(match);
      if (found.length >= n) return found;
      if (Date.now() > deadline) throw new Error(`${found.length} of ${n} spans within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
