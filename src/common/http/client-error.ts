import { Logger } from '@nestjs/common';
import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { DomainError } from '../errors/domain-error';
import { newRequestId } from '../ids';
import { REQUEST_ID_HEADER } from './request-id';

const logger = new Logger('HttpParser');

/** Node's response of the request in progress on a socket (what its own clientError handler checks). */
interface HttpSocket extends Duplex {
  _httpMessage?: { headersSent?: boolean } | null;
}

function errorFor(code: string | undefined): DomainError {
  if (code === 'HPE_HEADER_OVERFLOW')
    return new DomainError('headers_too_large', 'The request headers are larger than the server accepts (16 KiB).');
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return new DomainError('request_timeout', 'The request was not received in time.');
  return new DomainError('invalid_value', 'The request is not valid HTTP.');
}

/**
 * Requests Node's HTTP parser refuses before any middleware runs (oversize headers, bytes that are not
 * HTTP) get the documented error body and a request id instead of Node's empty 400/431, and a warning
 * line with that id (there is no request to write a request line of), as every other answer has a line.
 */
export function answerMalformedRequests(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: HttpSocket) => {
    if (err.code === 'ECONNRESET' || !socket.writable || socket._httpMessage?.headersSent) {
      socket.destroy();
      return;
    }
    const error = errorFor(err.code);
    const body = JSON.stringify(error.toBody());
    const id = newRequestId();
    const head = [
      `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Bad Request'}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `${REQUEST_ID_HEADER}: ${id}`,
      'Connection: close',
    ];
    logger.warn(
      { request_id: id, status: error.status, code: error.code, parser_error: err.code ?? null },
      `refused a request the HTTP parser could not read (${error.code}) as ${id}`,
    );
    socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  });
}
