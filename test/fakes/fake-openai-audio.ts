import type { ServerResponse } from 'node:http';
import { FakeExchange, parseMultipart, sendJson } from './fake-upstream';
import type { FakeOpenAi, FakeOpenAiMode } from './fake-openai';
import { encodedTone, splitBytes, toneSeconds } from './speech-audio';

// The fake OpenAI's audio routes: speech, and the custom voices' consents and voices. Chat and models: fake-openai.ts.

let sequence = 0;

const tagOf = (self: FakeOpenAi): Record<string, string> => ({ 'x-fake-provider': self.name });

export function openAiError(
  res: ServerResponse,
  status: number,
  type: string,
  code: string | null,
  message: string,
  param: string | null = null,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, { error: { message, type, param, code } }, headers);
}

export async function speech(x: FakeExchange<FakeOpenAiMode>, self: FakeOpenAi): Promise<void> {
  const tag = tagOf(self);
  const { response_format: format = 'mp3', input = '' } = (x.record.body ?? {}) as {
    response_format?: string;
    input?: string;
  };
  if (format === 'pcm') {
    // what OpenAI documents for pcm: 24 kHz, 16-bit signed little-endian, mono, no header, sent as it is made
    const pieces = splitBytes(
      await encodedTone('pcm', { sampleRate: 24000, channels: 1, bitrate: 0 }, toneSeconds(input)),
      self.audioChunks,
    );
    x.res.writeHead(200, { 'content-type': 'audio/pcm', ...tag });
    if (x.mode === 'dropAfterFirstChunk') return void x.res.write(pieces[0], () => x.res.socket?.destroy());
    for (const [i, piece] of pieces.entries()) {
      if (i > 0 && self.chunkDelayMs > 0 && !(await x.wait(self.chunkDelayMs))) return;
      if (x.res.destroyed) return;
      x.res.write(piece);
      self.audioChunksSent++;
    }
    return void x.res.end();
  }
  const { type, bytes } = fakeAudio(format);
  x.res.writeHead(200, { 'content-type': type, 'content-length': bytes.length, ...tag });
  x.res.end(bytes);
}

/** OpenAI's custom voices: a consent upload (`cons_…`), then a voice (`voice_…`) naming it; both multipart. */
export function createVoiceThing(x: FakeExchange<FakeOpenAiMode>, self: FakeOpenAi): void {
  const tag = tagOf(self);
  const parts = parseMultipart(x.record.raw, x.req.headers['content-type']);
  const text = (name: string): string | undefined => parts.get(name)?.value.toString('utf8');
  const created_at = Math.floor(Date.now() / 1000);
  if (x.record.path === '/v1/audio/voice_consents') {
    const recording = parts.get('recording');
    if (!recording?.filename || !text('language') || !text('name'))
      return openAiError(x.res, 400, 'invalid_request_error', null, 'recording, language and name are required');
    const id = `cons_${++sequence}`;
    self.voiceThings.set(id, {
      kind: 'consent',
      fields: { name: text('name') ?? '', language: text('language') ?? '' },
      file: recording.value,
    });
    return sendJson(
      x.res,
      200,
      { id, object: 'audio.voice_consent', name: text('name'), language: text('language'), created_at },
      tag,
    );
  }
  const sample = parts.get('audio_sample');
  const consent = text('consent') ?? '';
  if (!sample?.filename || !text('name'))
    return openAiError(x.res, 400, 'invalid_request_error', null, 'name and audio_sample are required');
  if (self.voiceThings.get(consent)?.kind !== 'consent')
    return openAiError(x.res, 400, 'invalid_request_error', null, `No consent recording '${consent}'`);
  const id = `voice_${++sequence}`;
  self.voiceThings.set(id, { kind: 'voice', fields: { name: text('name') ?? '', consent }, file: sample.value });
  sendJson(x.res, 200, { id, object: 'audio.voice', name: text('name'), type: 'audio_sample', created_at }, tag);
}

export function deleteVoiceThing(x: FakeExchange<FakeOpenAiMode>, self: FakeOpenAi): void {
  const tag = tagOf(self);
  const id = decodeURIComponent(x.record.path.split('/').pop() ?? '');
  if (!self.voiceThings.delete(id))
    return openAiError(x.res, 404, 'invalid_request_error', null, `No such object '${id}'`);
  sendJson(
    x.res,
    200,
    { id, deleted: true, object: x.record.path.includes('/voices/') ? 'audio.voice.deleted' : 'audio.voice_consent' },
    tag,
  );
}

/** A little audio of the requested format: enough for content-type and magic-byte checks. */
export function fakeAudio(format: string): { type: string; bytes: Buffer } {
  switch (format) {
    case 'wav': {
      const data = Buffer.alloc(4800); // 0.1 s of 24 kHz 16-bit mono silence
      const header = Buffer.alloc(44);
      header.write('RIFF', 0);
      header.writeUInt32LE(36 + data.length, 4);
      header.write('WAVEfmt ', 8);
      header.writeUInt32LE(16, 16);
      header.writeUInt16LE(1, 20);
      header.writeUInt16LE(1, 22);
      header.writeUInt32LE(24000, 24);
      header.writeUInt32LE(48000, 28);
      header.writeUInt16LE(2, 32);
      header.writeUInt16LE(16, 34);
      header.write('data', 36);
      header.writeUInt32LE(data.length, 40);
      return { type: 'audio/wav', bytes: Buffer.concat([header, data]) };
    }
    case 'flac':
      return { type: 'audio/flac', bytes: Buffer.concat([Buffer.from('fLaC'), Buffer.alloc(64)]) };
    case 'pcm':
      return { type: 'audio/pcm', bytes: Buffer.alloc(4800) };
    case 'opus':
      return { type: 'audio/opus', bytes: Buffer.concat([Buffer.from('OggS'), Buffer.alloc(64)]) };
    case 'aac':
      return { type: 'audio/aac', bytes: Buffer.concat([Buffer.from([0xff, 0xf1, 0x50, 0x80]), Buffer.alloc(64)]) };
    default: {
      // three silent MPEG-1 Layer III frames, 128 kbit/s, 44.1 kHz (417 bytes each)
      const frame = Buffer.alloc(417);
      frame.writeUInt32BE(0xfffb9064, 0);
      return { type: 'audio/mpeg', bytes: Buffer.concat([frame, frame, frame]) };
    }
  }
}
