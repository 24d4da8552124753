import { releaseEncoder, type AudioEncoder } from '../encoder';
import { createStreamingEncoder } from '../encoders';
import { EspeakEngine, EspeakVoiceNotFoundError, type SynthesizedAudio } from '../engines/espeak/espeak-engine';
import { createFlacEncoder } from '../flac';
import { decodePcm16le } from '../pcm';
import { createOutputEncoder, createTranscoder, type Transcoder } from '../transcoder';
import type { EncodeJobSpec, FromWorker, JobErrorCode, JobSpec, SpeechJobSpec, TranscodeJobSpec } from './protocol';
import { SLICE_BYTES } from './protocol';

/** A job's failure the main process acts on by its code. */
export class JobError extends Error {
  constructor(
    readonly code: JobErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export function audioTooLong(seconds: number, limit: number): JobError {
  return new JobError(
    'audio_too_long',
    `The audio reached ${Math.floor(seconds)} s, over the limit of ${limit} s of one request.`,
  );
}

/** One job in a worker: the scheduler runs `step` (one CPU slice) whenever `runnable`, round-robin with the other jobs. */
export interface WorkerJob {
  runnable(): boolean;
  step(): Promise<void>;
  /** Credit granted by the main side (generated jobs only). */
  grant(n: number): void;
  input(data: Uint8Array): void;
  end(): void;
  /** Releases the encoder and the engine's generator; called on cancel, failure and after `done`. */
  close(): void;
}

type Send = (message: FromWorker) => void;

let engine: EspeakEngine | null = null;
/** The engine is loaded by the first job that needs it: a worker that only transcodes never loads it. */
function sharedEngine(): EspeakEngine {
  engine ??= new EspeakEngine();
  return engine;
}

export function createJob(id: number, spec: JobSpec, credit: number, send: Send): WorkerJob {
  switch (spec.kind) {
    case 'speech':
      return new SpeechJob(id, spec, credit, send);
    case 'voices':
      return new VoicesJob(id, send);
    case 'transcode':
    case 'encode':
      return new FedJob(id, spec, send);
    case 'stats':
      throw new Error('stats is answered by the worker itself');
  }
}

/** Synthesis → encoding, one sentence group per step; output leaves in slices of at most SLICE_BYTES, `credit` at a time. */
class SpeechJob implements WorkerJob {
  private pieces: AsyncGenerator<SynthesizedAudio> | null = null;
  private sink: AudioEncoder | null = null;
  private readonly outbox: Buffer[] = [];
  private finished = false;
  private closed = false;
  private frames = 0;

  constructor(
    private readonly id: number,
    private readonly spec: SpeechJobSpec,
    private credit: number,
    private readonly send: Send,
  ) {}

  runnable(): boolean {
    // a consumer that has not pulled stops the work: nothing is made ahead of the credit
    return !this.closed && !this.finished && this.outbox.length === 0 && this.credit > 0;
  }

  async step(): Promise<void> {
    const { spec } = this;
    if (!this.sink) {
      const sink = await createOutputEncoder(spec.output);
      // cancelled while the encoder was being made: it is released, not kept
      if (this.closed) return releaseEncoder(sink);
      this.sink = sink;
    }
    this.pieces ??= sharedEngine().stream(spec.text, {
      voice: spec.voice,
      speed: spec.speed,
      vol: spec.vol,
      pitch: spec.pitch,
      sampleRate: spec.output.sampleRate,
      channels: spec.output.channels,
    });
    let next: IteratorResult<SynthesizedAudio>;
    try {
      next = await this.pieces.next();
    } catch (err) {
      if (err instanceof EspeakVoiceNotFoundError) throw new JobError('voice_not_found', err.message);
      throw err;
    }
    if (this.closed) return;
    if (next.done) {
      this.finished = true;
      const tail = this.sink.end();
      this.sink = null;
      this.queue(tail);
    } else {
      this.frames += next.value.samples.length / spec.output.channels;
      const seconds = this.frames / spec.output.sampleRate;
      if (spec.maxSeconds !== undefined && seconds > spec.maxSeconds) throw audioTooLong(seconds, spec.maxSeconds);
      this.queue(this.sink.push(next.value.samples));
    }
    this.flush();
  }

  grant(n: number): void {
    this.credit += n;
    this.flush();
  }

  input(): void {
    throw new Error('a speech job takes no input');
  }

  end(): void {
    throw new Error('a speech job takes no input');
  }

  close(): void {
    this.closed = true;
    if (this.sink) releaseEncoder(this.sink);
    this.sink = null;
    void this.pieces?.return(undefined).catch(() => undefined);
  }

  private queue(bytes: Buffer): void {
    for (let at = 0; at < bytes.length; at += SLICE_BYTES) this.outbox.push(bytes.subarray(at, at + SLICE_BYTES));
  }

  private flush(): void {
    while (this.credit > 0 && this.outbox.length > 0 && !this.closed) {
      this.credit -= 1;
      this.send({ t: 'slice', id: this.id, data: this.outbox.shift()! });
    }
    if (this.finished && this.outbox.length === 0 && !this.closed) {
      this.closed = true;
      this.send({ t: 'done', id: this.id });
    }
  }
}

class VoicesJob implements WorkerJob {
  private started = false;

  constructor(
    private readonly id: number,
    private readonly send: Send,
  ) {}

  runnable(): boolean {
    return !this.started;
  }

  async step(): Promise<void> {
    this.started = true;
    this.send({ t: 'done', id: this.id, result: await sharedEngine().listVoices() });
  }

  grant(): void {}
  input(): void {}
  end(): void {}
  close(): void {
    this.started = true;
  }
}

/** Transcode or plain encode: each input chunk is answered by one `output` (maybe empty), the end by the tail and `done`. */
class FedJob implements WorkerJob {
  private codec: Transcoder | AudioEncoder | null = null;
  private readonly inputs: (Uint8Array | null)[] = [];
  /** Odd bytes of a frame split across chunks (transcode input is a byte stream). */
  private carry = Buffer.alloc(0);
  private frames = 0;
  private closed = false;

  constructor(
    private readonly id: number,
    private readonly spec: TranscodeJobSpec | EncodeJobSpec,
    private readonly send: Send,
  ) {}

  runnable(): boolean {
    return !this.closed && this.inputs.length > 0;
  }

  async step(): Promise<void> {
    if (!this.codec) {
      const codec = await this.open();
      if (this.closed) return releaseEncoder(codec);
      this.codec = codec;
    }
    const data = this.inputs.shift();
    if (data === undefined || this.closed) return;
    if (data === null) {
      const tail = this.codec.end();
      this.codec = null;
      this.closed = true;
      this.send({ t: 'output', id: this.id, data: tail });
      this.send({ t: 'done', id: this.id });
      return;
    }
    this.send({ t: 'output', id: this.id, data: this.codec.push(this.samples(data)) });
  }

  grant(): void {}

  input(data: Uint8Array): void {
    this.inputs.push(data);
  }

  end(): void {
    this.inputs.push(null);
  }

  close(): void {
    this.closed = true;
    if (this.codec) releaseEncoder(this.codec);
    this.codec = null;
  }

  private open(): Promise<Transcoder | AudioEncoder> {
    const { spec } = this;
    if (spec.kind === 'transcode') {
      return createTranscoder({
        fromRate: spec.from.sampleRate,
        fromChannels: spec.from.channels,
        output: spec.output,
        gain: spec.gain,
      });
    }
    if (spec.format === 'flac' && spec.totalFrames !== undefined)
      return createFlacEncoder(spec.sampleRate, spec.channels, spec.totalFrames);
    return createStreamingEncoder(spec.format, spec);
  }

  /** Whole frames of the bytes so far; a transcode's input is counted against its audio cap. */
  private samples(data: Uint8Array): Int16Array {
    const channels = this.spec.kind === 'transcode' ? this.spec.from.channels : this.spec.channels;
    const bytes =
      this.carry.length > 0
        ? Buffer.concat([this.carry, data])
        : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    const whole = bytes.length - (bytes.length % (2 * channels));
    this.carry = Buffer.from(bytes.subarray(whole));
    const samples = decodePcm16le(bytes.subarray(0, whole));
    if (this.spec.kind === 'transcode') {
      this.frames += samples.length / channels;
      const seconds = this.frames / this.spec.from.sampleRate;
      if (this.spec.maxSeconds !== undefined && seconds > this.spec.maxSeconds)
        throw audioTooLong(seconds, this.spec.maxSeconds);
    }
    return samples;
  }
}
