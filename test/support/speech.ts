import { decodePcm16le } from '../../src/audio/pcm';
import type { TestApp } from './app';

export const SPEECH_PATH = '/v1/audio/speech';

export interface SpeechAnswer {
  status: number;
  headers: Headers;
  bytes: Buffer;
}

/** One synchronous speech request (a string body is sent as is), its answer read as bytes: audio or an error body. */
export async function speak(t: TestApp, secret: string, body: unknown): Promise<SpeechAnswer> {
  const res = await fetch(`${t.url}${SPEECH_PATH}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

/** The x-svc-* failover headers of an answer, as one object to compare. */
export const failoverHeaders = (headers: Headers): Record<string, unknown> => ({
  provider: headers.get('x-svc-provider-used'),
  isFallback: headers.get('x-svc-is-fallback'),
  level: headers.get('x-svc-fallback-level'),
  alert: headers.has('x-svc-fallback-alert')
    ? (JSON.parse(headers.get('x-svc-fallback-alert') ?? 'null') as unknown)
    : null,
});

/** Root mean square of 16-bit PCM, 0..1. */
export function rms(bytes: Buffer): number {
  const samples = decodePcm16le(bytes);
  let sum = 0;
  for (const s of samples) sum += (s / 32768) ** 2;
  return Math.sqrt(sum / Math.max(1, samples.length));
}
