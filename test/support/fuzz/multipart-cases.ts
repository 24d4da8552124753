import fc from 'fast-check';
import { Context, Expectation, FuzzCase, makeCase, validRequest } from './request';
import { KNOWN_OPERATIONS } from './fixtures';
import type { Schema } from './openapi';
import { MiB, validValue } from './schema';

interface Part {
  name: string;
  value: Buffer;
  filename?: string;
  type?: string;
}

const BOUNDARY = 'fuzzBoundary7MA4YWxkTrZu0gW';

/** A multipart/form-data body written by hand, so it can be cut, mislabelled or malformed. */
export function encodeMultipart(parts: Part[], boundary = BOUNDARY): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename !== undefined ? `; filename="${part.filename}"` : ''}`;
    const head = [
      `--${boundary}`,
      `Content-Disposition: ${disposition}`,
      ...(part.type ? [`Content-Type: ${part.type}`] : []),
    ].join('\r\n');
    chunks.push(Buffer.from(`${head}\r\n\r\n`, 'latin1'), part.value, Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

const text = (name: string, value: string | Buffer): Part => ({
  name,
  value: typeof value === 'string' ? Buffer.from(value) : value,
});

/** The parts of a valid form: the fixture's text fields and files (binary fields of the schema), or values from the schema. */
function validParts(ctx: Context): { parts: Part[]; files: string[]; schema: Schema } {
  const schema = ctx.op.body?.schema ?? {};
  const known = KNOWN_OPERATIONS[ctx.op.key];
  const files =
    known?.files ??
    Object.entries(schema.properties ?? {})
      .filter(([, s]) => s.format === 'binary')
      .map(([name]) => name);
  const fields = known?.body ?? (validValue(schema) as Record<string, unknown>);
  const parts: Part[] = Object.entries(fields)
    .filter(([name]) => !files.includes(name))
    .map(([name, value]) => text(name, typeof value === 'string' ? value : JSON.stringify(value)));
  for (const name of files) parts.push({ name, value: ctx.fixtures.wav, filename: 'consent.wav', type: 'audio/wav' });
  return { parts, files, schema };
}

const invalidAt = (name: string, codes?: string[], status = 400): Expectation => ({
  status: [status],
  codes,
  param: { exact: name },
});

/** One defect in an otherwise valid multipart upload: parts, values, files, framing, content type. */
export function multipartCases(ctx: Context): fc.Arbitrary<FuzzCase> {
  const { parts, files, schema } = validParts(ctx);
  const send = (
    defect: string,
    body: Buffer,
    expect: Expectation,
    type: string | null = `multipart/form-data; boundary=${BOUNDARY}`,
  ): FuzzCase => {
    const request = validRequest(ctx);
    request.body = body;
    if (type === null) delete request.headers['content-type'];
    else request.headers['content-type'] = type;
    return makeCase(ctx, `multipart: ${defect}`, request, expect);
  };
  const without = (name: string): Part[] => parts.filter((p) => p.name !== name);
  const required = new Set(schema.required ?? parts.map((p) => p.name));
  const textParts = parts.filter((p) => !files.includes(p.name));
  const cases: Array<fc.Arbitrary<FuzzCase>> = [];
  const rare: Array<fc.Arbitrary<FuzzCase>> = [];

  cases.push(
    fc
      .constantFrom(...parts.filter((p) => required.has(p.name)))
      .map((p) => send(`${p.name} left out`, encodeMultipart(without(p.name)), invalidAt(p.name, ['missing_field']))),
  );
  cases.push(
    fc
      .constantFrom('zzz_unknown', '__proto__', 'constructor', 'voice')
      .map((name) =>
        send(
          `unknown text part ${name}`,
          encodeMultipart([...parts, text(name, '1')]),
          invalidAt(name, ['unknown_field']),
        ),
      ),
  );
  if (textParts.length > 0) {
    cases.push(
      fc.tuple(fc.constantFrom(...textParts), fc.integer({ min: 0, max: 7 })).map(([part, kind]) => {
        const s = schema.properties?.[part.name] ?? {};
        const replace = (value: Buffer | string): Part[] =>
          parts.map((p) => (p.name === part.name ? text(p.name, value) : p));
        switch (kind) {
          case 0:
            return send(
              `${part.name} with a NUL`,
              encodeMultipart(replace('a\u0000b')),
              invalidAt(part.name, ['invalid_value']),
            );
          case 1:
            return send(
              `${part.name} of 70 KB (over the part limit)`,
              encodeMultipart(replace('v'.repeat(70 * 1024))),
              invalidAt(part.name, ['invalid_value']),
            );
          case 2:
            return send(`${part.name} twice`, encodeMultipart([...parts, part]), invalidAt(part.name));
          case 3:
            return send(
              `${part.name} as a nested name`,
              encodeMultipart([...without(part.name), text(`${part.name}[a]`, 'x')]),
              invalidAt(part.name),
            );
          case 4:
            return send(
              `${part.name} with invalid UTF-8`,
              encodeMultipart(replace(Buffer.from([0x61, 0xc3, 0x28, 0xff]))),
              { status: [], maybeValid: true },
            );
          case 5:
            return s.maxLength !== undefined
              ? send(
                  `${part.name} longer than maxLength`,
                  encodeMultipart(replace('m'.repeat(s.maxLength + 1))),
                  invalidAt(part.name),
                )
              : send(`${part.name} empty`, encodeMultipart(replace('')), { status: [], maybeValid: true });
          case 6:
            return (s.minLength ?? 0) > 0
              ? send(
                  `${part.name} shorter than minLength`,
                  encodeMultipart(replace('m'.repeat((s.minLength ?? 1) - 1))),
                  invalidAt(part.name),
                )
              : send(`${part.name} empty`, encodeMultipart(replace('')), { status: [], maybeValid: true });
          default:
            return send(
              `${part.name} as a file`,
              encodeMultipart([
                ...without(part.name),
                { name: part.name, value: part.value, filename: 'x.txt', type: 'text/plain' },
              ]),
              invalidAt(part.name, ['unknown_field']),
            );
        }
      }),
    );
  }
  if (files.length > 0) {
    const file = files[0];
    const withFile = (value: Buffer, filename = 'consent.wav'): Part[] => [
      ...without(file),
      { name: file, value, filename, type: 'audio/wav' },
    ];
    cases.push(
      fc.constantFrom(
        send(
          `${file} that is not audio`,
          encodeMultipart(withFile(Buffer.from('%PDF-1.4 not audio at all'.repeat(10)))),
          invalidAt(file, ['unsupported_media_type'], 415),
        ),
        send(
          `${file} empty`,
          encodeMultipart(withFile(Buffer.alloc(0))),
          invalidAt(file, ['unsupported_media_type'], 415),
        ),
        send(
          `${file} as a text part`,
          encodeMultipart([...without(file), text(file, 'consent.wav')]),
          invalidAt(file, ['invalid_value']),
        ),
        send(
          `${file} twice`,
          encodeMultipart([...parts, { name: file, value: ctx.fixtures.wav, filename: 'b.wav', type: 'audio/wav' }]),
          invalidAt(file, ['invalid_value']),
        ),
        send(
          `${file} under another name`,
          encodeMultipart([
            ...without(file),
            { name: 'audio', value: ctx.fixtures.wav, filename: 'a.wav', type: 'audio/wav' },
          ]),
          invalidAt('audio', ['unknown_field']),
        ),
        send(`${file} named ../../etc/passwd`, encodeMultipart(withFile(ctx.fixtures.wav, '../../etc/passwd')), {
          status: [],
          maybeValid: true,
        }),
      ),
    );
    // rare: 11 MiB on the wire
    rare.push(
      fc.constant(
        send(
          `${file} over 10 MiB`,
          encodeMultipart(withFile(Buffer.concat([ctx.fixtures.wav, Buffer.alloc(10 * MiB)]))),
          invalidAt(file, ['file_too_large'], 413),
        ),
      ),
    );
  }
  const valid = encodeMultipart(parts);
  const framing: Expectation = { status: [400] };
  const unsupported: Expectation = { status: [415], codes: ['unsupported_media_type'], param: { exact: null } };
  cases.push(
    fc
      .integer({ min: 1, max: valid.length - 4 })
      .map((cut) => send(`cut after ${cut} of ${valid.length} bytes`, valid.subarray(0, cut), framing)),
    fc.constantFrom(
      send('no boundary in the content type', valid, framing, 'multipart/form-data'),
      send('another boundary in the content type', valid, framing, 'multipart/form-data; boundary=notTheOneUsed'),
      // a part without a name is skipped: the rest of the form is valid
      send(
        'a part without Content-Disposition',
        Buffer.from(`--${BOUNDARY}\r\nContent-Type: text/plain\r\n\r\nx\r\n${valid.toString('latin1')}`, 'latin1'),
        { status: [], maybeValid: true },
      ),
      send(
        'too many parts',
        encodeMultipart([...parts, ...Array.from({ length: 12 }, (_, i) => text(`extra${i}`, 'x'))]),
        framing,
      ),
      send('garbage instead of parts', Buffer.from('garbage'), framing),
      send(
        'a JSON body',
        Buffer.from(JSON.stringify(Object.fromEntries(textParts.map((p) => [p.name, p.value.toString()])))),
        unsupported,
        'application/json',
      ),
      send('the form as text/plain', valid, unsupported, 'text/plain'),
      send('no content type', valid, unsupported, null),
    ),
  );
  return fc.oneof(
    ...cases.map((arbitrary) => ({ arbitrary, weight: 10 })),
    ...rare.map((arbitrary) => ({ arbitrary, weight: 1 })),
  );
}
