import { randomBytes } from 'node:crypto';
import type { AudioUpload } from './provider-adapter';

/** One part of a multipart/form-data body: a text field or a file. */
export type FormPart = { name: string; value: string } | { name: string; file: AudioUpload };

/** A multipart/form-data body built in memory (uploads are at most tens of MiB), with its content type. */
export function multipartBody(parts: FormPart[]): { contentType: string; body: Buffer } {
  const boundary = `----svc${randomBytes(12).toString('hex')}`;
  const quoted = (text: string): string => text.replace(/["\r\n\\]/g, '_');
  const chunks: Buffer[] = [];
  for (const part of parts) {
    if ('file' in part) {
      chunks.push(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="${quoted(part.name)}"; filename="${quoted(part.file.filename)}"\r\n` +
            `Content-Type: ${part.file.contentType}\r\n\r\n`,
        ),
        part.file.data,
        Buffer.from('\r\n'),
      );
    } else {
      chunks.push(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="${quoted(part.name)}"\r\n\r\n${part.value}\r\n`,
        ),
      );
    }
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { contentType: `multipart/form-data; boundary=${boundary}`, body: Buffer.concat(chunks) };
}
