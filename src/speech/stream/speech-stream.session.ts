import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WebSocket } from 'ws';
import { toDomainError } from '../../common/errors/api-error.filter';
import { DomainError } from '../../common/errors/domain-error';
import { newRequestId } from '../../common/ids';
import type { PlannedStep } from '../../failover/chain';
import type { FailoverService } from '../../failover/failover.service';
import type { AuthenticatedKey } from '../../keys/key-directory';
import { openEncoder, type StreamEncoder } from '../../audio/pool/pool-jobs';
import { audioTooLong, minimumAudioSeconds } from '../audio-cap';
import { ASYNC_TEXT_LIMIT, characterCount, SYNC_TEXT_LIMIT, SpeechJob, toSpeechJob } from '../speech-job';
import { CLIENT_CLOSED_REQUEST, type PrimedAudio, type SpeechService } from '../speech.service';
import { textPieces } from './text-pieces';
import { ClientMessage, parseClientMessage, TaskStartMessage } from './stream-messages';

export interface StreamLimits {
  idleMs: number;
  /** Socket buffer above which upstream reading pauses (backpressure). */
  highWaterBytes: number;
  /** How long a client may leave the buffer full before it is closed. */
  stalledMs: number;
  /** Seconds of audio one task may produce (SVC_MAX_AUDIO_SECONDS). */
  maxAudioSeconds: number;
}

/** `starting`: task_start received and being checked; text may already arrive and waits for it. */
type State = 'idle' | 'starting' | 'started' | 'finishing' | 'closed';

/** The fastest `speed` a task may ask for: the estimate's assumption while task_start is still being checked. */
const FASTEST_SPEED = 2;

/** Text received and not yet spoken, at most: a client sending faster than synthesis gets text_too_long, not an unbounded queue. */
export const MAX_QUEUED_CHARS = ASYNC_TEXT_LIMIT;

/** One WebSocket connection speaking MiniMax's event protocol (decisions §7). */
export class SpeechStreamSession {
  private readonly logger = new Logger('SpeechStream');
  private state: State = 'idle';
  private job: SpeechJob | null = null;
  /** pcm and flac only, made when the first audio arrives and dropped when the task ends: a held stream costs no encoder. */
  private encoder: StreamEncoder | null = null;
  /** Seconds of audio this task has produced, and the least its queued text will still make: both count against the cap. */
  private audioSeconds = 0;
  private promisedSeconds = 0;
  private planned: PlannedStep[] = [];
  /** The step that produced the first audio: every later sentence goes to it (no failover after audio began). */
  private step: PlannedStep | null = null;
  private work: Promise<void> = Promise.resolve();
  private idleTimer: NodeJS.Timeout | null = null;
  private readonly inFlight = new Set<AbortController>();
  private pendingBytes = Buffer.alloc(0);
  private queuedChars = 0;
  /** Text pieces queued or being spoken: the one running is the task's last once task_finish came and this is 1. */
  private queuedPieces = 0;
  /**
   * The newest audio of the task's last piece, not yet sent: only once task_finish was received can a chunk be
   * known to be the last, and `is_final` goes on that chunk (with the encoder's tail), never on an empty message.
   */
  private held: Buffer | null = null;

  constructor(
    private readonly ws: WebSocket,
    readonly sessionId: string,
    /** The upgrade's `req_` id (on its 101 and in this stream's logs). */
    readonly requestId: string,
    private readonly key: AuthenticatedKey,
    private readonly speech: SpeechService,
    private readonly failover: FailoverService,
    private readonly limits: StreamLimits,
  ) {
    ws.on('message', (data, isBinary) => this.onMessage(data as Buffer, isBinary));
    ws.on('close', () => this.onClose());
    this.send({ event: 'connected_success', session_id: sessionId });
    this.touch();
  }

  /** Server shutdown: close with 1001 and a reason. */
  shutdown(): void {
    this.releaseHeld();
    this.close(1001, 'server shutting down');
  }

  /** Graceful shutdown: the text queued so far is spoken (a finishing task completes), then 1001. */
  async drain(): Promise<void> {
    await this.work;
    this.shutdown();
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    // frames that arrive after we closed are dropped (and must not re-arm the idle timer)
    if (this.state === 'closed') return;
    this.touch();
    let message: ClientMessage;
    try {
      message = parseClientMessage(data, isBinary);
    } catch (err) {
      return this.fail(err, 1008);
    }
    switch (message.event) {
      case 'task_start':
        if (this.state !== 'idle') return this.fail(new DomainError('invalid_value', 'task_start was already sent on this connection.', { param: 'event' }), 1008);
        // set now, not when the start is done: a second task_start right behind the first is refused too
        this.state = 'starting';
        this.work = this.work.then(() => this.start(message.body)).catch((err: unknown) => this.fail(err, 1008));
        return;
      case 'task_continue':
        if (!this.accepting) return this.fail(new DomainError('invalid_value', 'Send task_start before task_continue.', { param: 'event' }), 1008);
        if (this.queuedChars + message.body.text.length > MAX_QUEUED_CHARS) {
          const tooMuch = `More than ${MAX_QUEUED_CHARS} characters are waiting to be spoken: send text no faster than the audio comes back.`;
          return this.fail(new DomainError('text_too_long', tooMuch, { param: 'text' }), 1008);
        }
        // predictable: even the shortest reading of the task's text is over the cap, so none of this text is spoken
        this.promisedSeconds += minimumAudioSeconds(message.body.text, this.job?.speed ?? FASTEST_SPEED);
        if (this.promisedSeconds > this.limits.maxAudioSeconds) return this.fail(audioTooLong(this.limits.maxAudioSeconds, 'of this stream task'), 1008);
        for (const piece of textPieces(message.body.text)) this.enqueue(piece);
        return;
      case 'task_finish':
        if (!this.accepting) return this.fail(new DomainError('invalid_value', 'Send task_start before task_finish.', { param: 'event' }), 1008);
        this.state = 'finishing';
        this.work = this.work.then(() => this.finish()).catch((err: unknown) => this.fail(err, 1011));
        return;
    }
  }

  /** Text and task_finish are taken once task_start was received (they wait for its checks). */
  private get accepting(): boolean {
    return this.state === 'starting' || this.state === 'started';
  }

  private async start(body: TaskStartMessage): Promise<void> {
    const job = toSpeechJob({ model: body.model, text: ' ', voice_setting: body.voice_setting, audio_setting: body.audio_setting }, SYNC_TEXT_LIMIT);
    if (job.output.format === 'wav') {
      throw new DomainError('invalid_value', 'wav cannot be streamed (its header needs the length): use mp3, pcm or flac.', { param: 'audio_setting.format' });
    }
    // checks the model and the entry voice now, so a bad task_start fails before any text arrives
    this.planned = await this.speech.route(this.failover.openScope(this.requestId, this.key, 'speech'), job);
    this.job = job;
    if (this.state === 'closed') return;
    if (this.state === 'starting') this.state = 'started';
    const first = this.failover.firstAvailable(this.planned);
    this.send({ event: 'task_started', session_id: this.sessionId, provider: first.provider, fallback_level: first.level });
  }

  private enqueue(text: string): void {
    this.queuedChars += text.length;
    this.queuedPieces += 1;
    this.work = this.work
      .then(() => this.synthesize(text))
      .catch((err: unknown) => this.fail(err, toDomainError(err)?.code === 'audio_too_long' ? 1008 : 1011))
      .finally(() => {
        this.queuedChars -= text.length;
        this.queuedPieces -= 1;
      });
  }

  /**
   * One sentence group: the first decides the provider (failover allowed); later ones must use the same step.
   * MP3 is asked of the provider as it is (its frames stand alone, so sentences join into one stream of frames,
   * as on MiniMax's own stream) and relayed untouched; FLAC (one header per stream) and pcm come as pcm through
   * the session's encoder.
   */
  private async synthesize(text: string): Promise<void> {
    if (!this.job || this.state === 'closed') return;
    const limit = this.limits.maxAudioSeconds;
    const relay = this.job.output.format === 'mp3';
    const job: SpeechJob = { ...this.job, text, output: { ...this.job.output, format: relay ? 'mp3' : 'pcm' } };
    const { sampleRate, channels, bitrate } = job.output;
    const emit = (bytes: Buffer): Promise<void> => {
      // relayed mp3 is constant-bitrate: its length in seconds follows from its bytes
      this.audioSeconds += relay ? (bytes.length * 8) / (primed?.audio.bitrate ?? bitrate) : bytes.length / (2 * channels * sampleRate);
      if (this.audioSeconds > limit) throw audioTooLong(limit, 'of this stream task');
      return relay ? this.deliver(bytes) : this.emitPcm(bytes);
    };
    const scope = this.failover.openScope(newRequestId(), this.key, 'speech');
    scope.streaming = true;
    const controller = new AbortController();
    this.inFlight.add(controller);
    controller.signal.addEventListener('abort', () => scope.abort(), { once: true });
    let primed: PrimedAudio | null = null;
    try {
      primed = await this.speech.start(scope, job, this.step ? [this.step] : this.planned, Math.max(1, limit - this.audioSeconds));
      this.step ??= this.planned.find((s) => s.level === scope.served?.level) ?? null;
      if (!primed.first.done) await emit(primed.first.value);
      for (let next = await primed.rest.next(); !next.done && !scope.aborted; next = await primed.rest.next()) await emit(next.value);
      // the offline engine ends early, without an error, when the connection goes
      scope.finish({ status: scope.aborted ? CLIENT_CLOSED_REQUEST : 200, characters: characterCount(text) });
    } catch (err) {
      // a provider call cancelled because the connection went is no upstream failure
      scope.finish({ status: toDomainError(err)?.status ?? (scope.aborted ? CLIENT_CLOSED_REQUEST : 502), characters: characterCount(text) });
      throw err;
    } finally {
      this.inFlight.delete(controller);
      // a sentence cut short closes its provider call and encoder (a no-op on one that ran to its end)
      await primed?.rest.return?.().catch(() => undefined);
    }
  }

  /** Raw s16le from the provider → the session's one continuous pcm or FLAC encoder → hex audio messages. */
  private async emitPcm(bytes: Buffer): Promise<void> {
    if (!this.job || this.state === 'closed') return;
    const { format, sampleRate, channels, bitrate } = this.job.output;
    this.encoder ??= openEncoder({ format: format === 'flac' ? 'flac' : 'pcm', sampleRate, channels, bitrate });
    const encoder = this.encoder;
    const frame = 2 * this.job.output.channels;
    const all = Buffer.concat([this.pendingBytes, bytes]);
    const usable = all.length - (all.length % frame);
    this.pendingBytes = all.subarray(usable);
    if (usable === 0) return;
    const samples = new Int16Array(all.buffer.slice(all.byteOffset, all.byteOffset + usable));
    await this.deliver(await encoder.push(samples));
  }

  /**
   * Audio goes out as it is made, except in the task's last piece once task_finish was received: there each
   * chunk waits for the next one (or for the end of the task), so the last is known and carries `is_final`.
   */
  private async deliver(audio: Buffer): Promise<void> {
    if (audio.length === 0) return;
    if (this.state !== 'finishing' || this.queuedPieces > 1) return this.sendAudio(audio, false);
    // the older chunk goes first: a failure or shutdown while it waits for the client must not send this one before it
    const previous = this.held;
    this.held = null;
    if (previous) await this.sendAudio(previous, false);
    this.held = audio;
  }

  /** The held chunk joined with the encoder's tail is the final audio message; a task without audio sends none. */
  private async finish(): Promise<void> {
    if (!this.job) return;
    const encoder = this.encoder;
    this.encoder = null;
    const last = Buffer.concat([this.held ?? Buffer.alloc(0), encoder ? await encoder.end() : Buffer.alloc(0)]);
    this.held = null;
    if (last.length > 0) await this.sendAudio(last, true);
    this.send({ event: 'task_finished', session_id: this.sessionId });
    this.close(1000, 'task finished');
  }

  /** Waits while the client's buffer is full; a client that stops reading is closed, not buffered without bound. */
  private async sendAudio(audio: Buffer, isFinal: boolean): Promise<void> {
    if (audio.length === 0) return;
    const started = Date.now();
    while (this.ws.bufferedAmount > this.limits.highWaterBytes && this.state !== 'closed') {
      if (Date.now() - started > this.limits.stalledMs) {
        // a close frame would only queue behind the unread audio: drop the connection and its buffers now
        this.close(1008, 'client is not reading', true);
        throw new DomainError('invalid_value', 'The client stopped reading audio.');
      }
      await sleep(10);
    }
    this.touch();
    this.sendNow(audio, isFinal);
  }

  /** A task cut short (failure, shutdown) still delivers the audio it held back, not as the final message. */
  private releaseHeld(): void {
    if (this.held && this.state !== 'closed') this.sendNow(this.held, false);
    this.held = null;
  }

  private sendNow(audio: Buffer, isFinal: boolean): void {
    const served = this.step;
    this.send({ event: 'task_continued', data: { audio: audio.toString('hex') }, is_final: isFinal, provider: served?.provider ?? null, fallback_level: served?.level ?? null });
  }

  private fail(err: unknown, code: 1008 | 1011): void {
    if (this.state === 'closed') return;
    const error = toDomainError(err) ?? new DomainError('internal_error', 'The stream failed.');
    if (!(err instanceof DomainError) && error.code === 'internal_error') this.logger.error({ err, request_id: this.requestId }, `stream ${this.sessionId} failed`);
    // a client mistake is 1008; an upstream failure after the task started is 1011
    const closeCode = error.status >= 500 ? 1011 : code;
    this.releaseHeld();
    this.send({ event: 'task_failed', session_id: this.sessionId, error: { code: error.code, message: error.message } });
    this.close(closeCode, error.code);
  }

  private send(message: object): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.send(JSON.stringify(message));
  }

  private close(code: number, reason: string, terminate = false): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    if (this.idleTimer) clearTimeout(this.idleTimer);
    for (const controller of this.inFlight) controller.abort();
    this.dropEncoder();
    if (terminate) this.ws.terminate();
    else this.ws.close(code, reason.slice(0, 120));
  }

  private onClose(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    if (this.state !== 'closed') {
      this.state = 'closed';
      for (const controller of this.inFlight) controller.abort();
    }
    this.dropEncoder();
  }

  private dropEncoder(): void {
    this.encoder?.release();
    this.encoder = null;
  }

  private touch(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.close(1000, 'idle timeout'), this.limits.idleMs);
    this.idleTimer.unref();
  }
}
