import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WebSocket } from 'ws';
import { toDomainError } from '../../common/errors/domain-error';
import { DomainError } from '../../common/errors/domain-error';
import type { PlannedStep } from '../../failover/chain';
import type { FailoverService } from '../../failover/failover.service';
import { openCall } from '../../failover/proxied-call';
import type { AuthenticatedKey } from '../../keys/key-directory';
import { openEncoder, type StreamEncoder } from '../../audio/pool/pool-jobs';
import { audioTooLong, minimumAudioSeconds } from '../audio-cap';
import { ASYNC_TEXT_LIMIT, characterCount, SYNC_TEXT_LIMIT, SpeechJob, toSpeechJob } from '../speech-job';
import type { SpeechService } from '../speech.service';
import { ExtraInfo, SUCCESS, taskFailed } from './stream-replies';
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

/** The text of one `task_continue`: its audio ends with one `is_final` message, and its usage is recorded under its own request id. */
interface Turn {
  /** `<trace_id>_<n>` for the n-th task_continue: every usage record of its pieces has this id. */
  requestId: string;
  characters: number;
  /** Pieces not yet spoken: the chunks of the last one are held back so the last is known. */
  piecesLeft: number;
  /** Audio bytes sent for this text, and seconds of audio made for it. */
  bytes: number;
  seconds: number;
}

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
  /** `task_continue` messages received so far: the number in each one's request id. */
  private turns = 0;
  /** Turns queued or being spoken: the one running is the task's last once task_finish came and this is 1. */
  private queuedTurns = 0;
  /**
   * The newest audio of a turn's last piece, not yet sent: a chunk is known to be its turn's last only when the
   * piece ends, and `is_final` goes on that chunk (with MiniMax's `extra_info`).
   */
  private held: { audio: Buffer; turn: Turn } | null = null;

  constructor(
    private readonly ws: WebSocket,
    readonly sessionId: string,
    /** The upgrade's `req_` id (on its 101, in this stream's logs, and as `trace_id` on every message). */
    readonly requestId: string,
    /**
     * The stream's key as the key directory knows it now (in memory): looked up on every client message and
     * before every audio message, so a deleted key stops the stream, and a changed chain serves the next task_start.
     */
    private readonly currentKey: () => AuthenticatedKey | null,
    private readonly speech: SpeechService,
    private readonly failover: FailoverService,
    private readonly limits: StreamLimits,
  ) {
    ws.on('message', (data, isBinary) => this.onMessage(data as Buffer, isBinary));
    ws.on('close', () => this.onClose());
    this.send({ event: 'connected_success' });
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
    if (!this.currentKey()) return this.fail(this.revoked(), 1008);
    let message: ClientMessage;
    try {
      message = parseClientMessage(data, isBinary);
    } catch (err) {
      return this.fail(err, 1008);
    }
    switch (message.event) {
      case 'task_start':
        if (this.state !== 'idle')
          return this.fail(
            new DomainError('invalid_value', 'task_start was already sent on this connection.', { param: 'event' }),
            1008,
          );
        // set now, not when the start is done: a second task_start right behind the first is refused too
        this.state = 'starting';
        this.work = this.work.then(() => this.start(message.body)).catch((err: unknown) => this.fail(err, 1008));
        return;
      case 'task_continue':
        if (!this.accepting)
          return this.fail(
            new DomainError('invalid_value', 'Send task_start before task_continue.', { param: 'event' }),
            1008,
          );
        if (this.queuedChars + message.body.text.length > MAX_QUEUED_CHARS) {
          const tooMuch = `More than ${MAX_QUEUED_CHARS} characters are waiting to be spoken: send text no faster than the audio comes back.`;
          return this.fail(new DomainError('text_too_long', tooMuch, { param: 'text' }), 1008);
        }
        // predictable: even the shortest reading of the task's text is over the cap, so none of this text is spoken
        this.promisedSeconds += minimumAudioSeconds(message.body.text, this.job?.speed ?? FASTEST_SPEED);
        if (this.promisedSeconds > this.limits.maxAudioSeconds)
          return this.fail(audioTooLong(this.limits.maxAudioSeconds, 'of this stream task'), 1008);
        this.enqueue(message.body.text);
        return;
      case 'task_finish':
        if (!this.accepting)
          return this.fail(
            new DomainError('invalid_value', 'Send task_start before task_finish.', { param: 'event' }),
            1008,
          );
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
    // every field of task_start but the text: MiniMax's optional fields go to a MiniMax step as sent
    const job = toSpeechJob({ ...body, text: ' ' }, SYNC_TEXT_LIMIT);
    if (job.output.format === 'wav') {
      throw new DomainError(
        'invalid_value',
        'wav cannot be streamed (its header needs the length): use mp3, pcm or flac.',
        { param: 'audio_setting.format' },
      );
    }
    // checks the model and the entry voice now, so a bad task_start fails before any text arrives; the chain is the key's as it is now
    this.planned = await this.speech.route(this.key(), job);
    this.job = job;
    if (this.state === 'closed') return;
    if (this.state === 'starting') this.state = 'started';
    const first = this.failover.firstAvailable(this.planned);
    // request_id: the stream's usage records are under `<it>_<n>` for the n-th task_continue (GET /v1/usage?request_id= finds them all)
    this.send({
      event: 'task_started',
      request_id: this.requestId,
      provider: first.provider,
      fallback_level: first.level,
    });
  }

  /** One task_continue: its pieces, then the end of its audio (the `is_final` message). */
  private enqueue(text: string): void {
    const pieces = textPieces(text);
    // characters as the usage records count them: the sum over the pieces sent upstream
    const characters = pieces.reduce((sum, piece) => sum + characterCount(piece), 0);
    const turn: Turn = {
      requestId: `${this.requestId}_${++this.turns}`,
      characters,
      piecesLeft: pieces.length,
      bytes: 0,
      seconds: 0,
    };
    this.queuedChars += text.length;
    this.queuedTurns += 1;
    // a failure the client caused (the audio cap, a deleted key) is 1008; the provider's is 1011
    const closeCodeOf = (err: unknown): 1008 | 1011 =>
      ['audio_too_long', 'key_revoked'].includes(toDomainError(err)?.code ?? '') ? 1008 : 1011;
    for (const piece of pieces) {
      this.work = this.work.then(() => this.synthesize(piece, turn)).then(() => void (turn.piecesLeft -= 1));
    }
    this.work = this.work
      .then(() => this.endTurn(turn))
      .catch((err: unknown) => this.fail(err, closeCodeOf(err)))
      .finally(() => {
        this.queuedChars -= text.length;
        this.queuedTurns -= 1;
      });
  }

  /**
   * One sentence group: the first decides the provider (failover allowed); later ones must use the same step.
   * MP3 is asked of the provider as it is (its frames stand alone, so sentences join into one stream of frames,
   * as on MiniMax's own stream) and relayed untouched; FLAC (one header per stream) and pcm come as pcm through
   * the session's encoder.
   */
  private async synthesize(text: string, turn: Turn): Promise<void> {
    if (!this.job || this.state === 'closed') return;
    const limit = this.limits.maxAudioSeconds;
    const relay = this.job.output.format === 'mp3';
    const job: SpeechJob = { ...this.job, text, output: { ...this.job.output, format: relay ? 'mp3' : 'pcm' } };
    const { sampleRate, channels } = job.output;
    let bitrate = job.output.bitrate;
    const emit = (bytes: Buffer): Promise<void> => {
      // relayed mp3 is constant-bitrate: its length in seconds follows from its bytes
      const seconds = relay ? (bytes.length * 8) / bitrate : bytes.length / (2 * channels * sampleRate);
      this.audioSeconds += seconds;
      turn.seconds += seconds;
      if (this.audioSeconds > limit) throw audioTooLong(limit, 'of this stream task');
      return relay ? this.deliver(bytes, turn) : this.emitPcm(bytes, turn);
    };
    const controller = new AbortController();
    this.inFlight.add(controller);
    const call = openCall(this.failover, turn.requestId, this.key(), 'speech', controller.signal);
    try {
      // a failure throws back here (the session closes with it): the call has recorded it
      await this.speech.synthesize(
        call,
        job,
        {
          open: (primed) => {
            bitrate = primed.audio.bitrate ?? bitrate;
            this.step ??= this.planned.find((s) => s.level === call.scope.served?.level) ?? null;
          },
          write: emit,
        },
        { planned: this.step ? [this.step] : this.planned, maxSeconds: Math.max(1, limit - this.audioSeconds) },
      );
    } finally {
      this.inFlight.delete(controller);
    }
  }

  /** Raw s16le from the provider → the session's one continuous pcm or FLAC encoder → hex audio messages. */
  private async emitPcm(bytes: Buffer, turn: Turn): Promise<void> {
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
    await this.deliver(await encoder.push(samples), turn);
  }

  /**
   * Audio goes out as it is made, except in a turn's last piece: there each chunk waits for the next one (or for
   * the end of the piece), so the turn's last chunk is known and carries `is_final`.
   */
  private async deliver(audio: Buffer, turn: Turn): Promise<void> {
    if (audio.length === 0) return;
    if (turn.piecesLeft > 1) return this.sendAudio(audio, turn, false);
    // the older chunk goes first: a failure or shutdown while it waits for the client must not send this one before it
    const previous = this.held;
    this.held = null;
    if (previous) await this.sendAudio(previous.audio, previous.turn, false);
    this.held = { audio, turn };
  }

  /**
   * The end of one task_continue's audio: the held chunk, with `is_final` and MiniMax's `extra_info`. When it is
   * the task's last text and task_finish came, the encoder's tail (FLAC's last block) joins it. A text that made
   * no audio (only spaces, say) still gets its `is_final` message, with empty audio: MiniMax's clients wait for it.
   */
  private async endTurn(turn: Turn): Promise<void> {
    if (!this.job || this.state === 'closed') return;
    const held = this.held?.turn === turn ? this.held.audio : Buffer.alloc(0);
    this.held = null;
    const taskEnds = this.state === 'finishing' && this.queuedTurns === 1;
    const tail = taskEnds ? await this.endEncoder() : Buffer.alloc(0);
    await this.sendAudio(Buffer.concat([held, tail]), turn, true);
  }

  /** The encoder's last bytes (FLAC's last, short block); the encoder is gone after. */
  private async endEncoder(): Promise<Buffer> {
    const encoder = this.encoder;
    this.encoder = null;
    return encoder ? await encoder.end() : Buffer.alloc(0);
  }

  /**
   * After the last turn. Its `is_final` went out before task_finish arrived, so the encoder may still hold
   * FLAC's last block: it follows in one more audio message (is_final false), then task_finished.
   */
  private async finish(): Promise<void> {
    if (!this.job) return;
    const tail = await this.endEncoder();
    if (tail.length > 0) await this.sendAudio(tail, null, false);
    this.send({ event: 'task_finished' });
    this.close(1000, 'task finished');
  }

  /** Waits while the client's buffer is full; a client that stops reading is closed, not buffered without bound. */
  private async sendAudio(audio: Buffer, turn: Turn | null, isFinal: boolean): Promise<void> {
    if (audio.length === 0 && !isFinal) return;
    const started = Date.now();
    while (this.ws.bufferedAmount > this.limits.highWaterBytes && this.state !== 'closed') {
      if (Date.now() - started > this.limits.stalledMs) {
        // a close frame would only queue behind the unread audio: drop the connection and its buffers now
        this.close(1008, 'client is not reading', true);
        throw new DomainError('invalid_value', 'The client stopped reading audio.');
      }
      await sleep(10);
    }
    // a key deleted meanwhile gets no more audio, whether or not its client sends another message
    if (!this.currentKey()) throw this.revoked();
    this.touch();
    this.sendNow(audio, turn, isFinal);
  }

  /** A task cut short (failure, shutdown) still delivers the audio it held back, not as the final message. */
  private releaseHeld(): void {
    if (this.held && this.state !== 'closed' && this.currentKey()) this.sendNow(this.held.audio, this.held.turn, false);
    this.held = null;
  }

  private sendNow(audio: Buffer, turn: Turn | null, isFinal: boolean): void {
    const served = this.step;
    if (turn) turn.bytes += audio.length;
    this.send({
      event: 'task_continued',
      request_id: turn?.requestId ?? null,
      data: { audio: audio.toString('hex') },
      is_final: isFinal,
      ...(isFinal && turn && this.job ? { extra_info: this.extraInfo(turn, this.job) } : {}),
      provider: served?.provider ?? null,
      fallback_level: served?.level ?? null,
    });
  }

  private extraInfo(turn: Turn, job: SpeechJob): ExtraInfo {
    const { format, sampleRate, channels, bitrate } = job.output;
    return {
      audio_length: Math.round(turn.seconds * 1000),
      audio_sample_rate: sampleRate,
      audio_size: turn.bytes,
      audio_format: format,
      audio_channel: channels,
      usage_characters: turn.characters,
      ...(format === 'mp3' ? { bitrate } : {}),
    };
  }

  /** The key as it is now; a deleted key throws key_revoked (the stream ends with 1008). */
  private key(): AuthenticatedKey {
    const key = this.currentKey();
    if (!key) throw this.revoked();
    return key;
  }

  private revoked(): DomainError {
    return new DomainError('key_revoked', 'The API key of this stream was deleted.');
  }

  private fail(err: unknown, code: 1008 | 1011): void {
    if (this.state === 'closed') return;
    const error = toDomainError(err) ?? new DomainError('internal_error', 'The stream failed.');
    if (!(err instanceof DomainError) && error.code === 'internal_error')
      this.logger.error({ err, request_id: this.requestId }, `stream ${this.sessionId} failed`);
    // a client mistake is 1008; an upstream failure after the task started is 1011
    const closeCode = error.status >= 500 ? 1011 : code;
    this.releaseHeld();
    if (this.ws.readyState === this.ws.OPEN)
      this.ws.send(JSON.stringify(taskFailed(this.sessionId, this.requestId, error)));
    this.close(closeCode, error.code);
  }

  /** Every server message carries session_id, trace_id (the upgrade's request id) and base_resp (decisions §7). */
  private send(message: { event: string } & Record<string, unknown>): void {
    if (this.ws.readyState === this.ws.OPEN)
      this.ws.send(
        JSON.stringify({ ...message, session_id: this.sessionId, trace_id: this.requestId, base_resp: SUCCESS }),
      );
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
