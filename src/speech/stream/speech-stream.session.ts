import { Logger } from '@nestjs/common';
import type { WebSocket } from 'ws';
import { toDomainError } from '../../common/errors/domain-error';
import { DomainError } from '../../common/errors/domain-error';
import type { PlannedStep } from '../../failover/chain';
import type { FailoverService } from '../../failover/failover.service';
import { openCall } from '../../failover/proxied-call';
import type { TraceOrigin } from '../../tracing/request-trace';
import type { AuthenticatedKey } from '../../keys/key-directory';
import { audioTooLong, minimumAudioSeconds } from '../audio-cap';
import { ASYNC_TEXT_LIMIT, characterCount, SpeechJob } from '../speech-job';
import type { SpeechService } from '../speech.service';
import type { VoicePlan } from '../../voices/voice-plan';
import { SUCCESS, taskFailed } from './stream-replies';
import { StreamAudioOut, type Turn } from './stream-audio-out';
import { textPieces } from './text-pieces';
import { ClientMessage, parseClientMessage, TaskStartMessage } from './stream-messages';
import { outOfOrder, streamJob, type StreamState } from './stream-order';

export interface StreamLimits {
  idleMs: number;
  /** Socket buffer above which upstream reading pauses (backpressure). */
  highWaterBytes: number;
  /** How long a client may leave the buffer full before it is closed. */
  stalledMs: number;
  /** Seconds of audio one task may produce (SVC_MAX_AUDIO_SECONDS). */
  maxAudioSeconds: number;
}

/** The fastest `speed` a task may ask for: the estimate's assumption while task_start is still being checked. */
const FASTEST_SPEED = 2;

/** Text received and not yet spoken, at most: a client sending faster than synthesis gets text_too_long, not an unbounded queue. */
export const MAX_QUEUED_CHARS = ASYNC_TEXT_LIMIT;

/** One WebSocket connection speaking MiniMax's event protocol (decisions §7). */
export class SpeechStreamSession {
  private readonly logger = new Logger('SpeechStream');
  private state: StreamState = 'idle';
  private job: SpeechJob | null = null;
  /** Seconds of audio this task has produced, and the least its queued text will still make: both count against the cap. */
  private audioSeconds = 0;
  private promisedSeconds = 0;
  /** The task's steps and their voices, decided at task_start. */
  private plan: VoicePlan | null = null;
  /** The step that produced the first audio: every later sentence goes to it (no failover after audio began). */
  private step: PlannedStep | null = null;
  private work: Promise<void> = Promise.resolve();
  private idleTimer: NodeJS.Timeout | null = null;
  private readonly inFlight = new Set<AbortController>();
  private readonly audio: StreamAudioOut;
  private queuedChars = 0;
  /** `task_continue` messages received so far: the number in each one's request id. */
  private turns = 0;
  /** Turns queued or being spoken: the one running is the task's last once task_finish came and this is 1. */
  private queuedTurns = 0;
  private readonly openedAt = Date.now();

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
    /** Where each turn's SERVER span comes from (decisions §12); null while traces are off. */
    private readonly traceOrigin: TraceOrigin | null = null,
  ) {
    this.audio = new StreamAudioOut({
      ws,
      keyId: currentKey()?.id ?? '',
      highWaterBytes: limits.highWaterBytes,
      stalledMs: limits.stalledMs,
      closed: () => this.state === 'closed',
      job: () => this.job,
      served: () => this.step,
      keyGone: () => (this.currentKey() ? null : this.revoked()),
      send: (message) => this.send(message),
      close: (code, reason, terminate) => this.close(code, reason, terminate),
      touch: () => this.touch(),
    });
    ws.on('message', (data, isBinary) => this.onMessage(data as Buffer, isBinary));
    ws.on('close', (code: number, reason: Buffer) => this.onClose(code, reason));
    this.send({ event: 'connected_success' });
    this.touch();
  }

  /** Server shutdown: close with 1001 and a reason. */
  shutdown(): void {
    this.audio.releaseHeld();
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
    const refused = outOfOrder(message.event, this.state);
    if (refused) return this.fail(refused, 1008);
    switch (message.event) {
      case 'task_start':
        // set now, not when the start is done: a second task_start right behind the first is refused too
        this.state = 'starting';
        this.work = this.work.then(() => this.start(message.body)).catch((err: unknown) => this.fail(err, 1008));
        return;
      case 'task_continue':
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
        this.state = 'finishing';
        this.work = this.work.then(() => this.finish()).catch((err: unknown) => this.fail(err, 1011));
        return;
    }
  }

  private async start(body: TaskStartMessage): Promise<void> {
    const job = streamJob(body);
    // checks the model and the entry voice now, so a bad task_start fails before any text arrives; the chain is the key's as it is now
    const plan = await this.speech.plan(this.key(), job);
    this.plan = plan;
    this.job = job;
    if (this.state === 'closed') return;
    if (this.state === 'starting') this.state = 'started';
    const first = this.failover.firstAvailable(plan.steps);
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
    const plan = this.plan;
    if (!this.job || !plan || this.state === 'closed') return;
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
      return relay ? this.audio.deliver(bytes, turn) : this.audio.pcm(bytes, turn);
    };
    const controller = new AbortController();
    this.inFlight.add(controller);
    const call = openCall(this.failover, turn.requestId, this.key(), 'speech', controller.signal, this.traceOrigin);
    try {
      // a failure throws back here (the session closes with it): the call has recorded it
      await this.speech.synthesize(
        call,
        job,
        {
          open: (primed) => {
            bitrate = primed.audio.bitrate ?? bitrate;
            this.step ??= plan.steps.find((s) => s.level === call.scope.served?.level) ?? null;
          },
          write: emit,
          // the provider broke after its audio began: named, as the SSE paths name it (never internal_error)
          broke: (reason, _status, err) => {
            if (err instanceof DomainError) throw err;
            const provider = call.scope.served?.provider ?? 'the provider';
            throw new DomainError('upstream_stream_failed', `The upstream stream from ${provider} failed: ${reason}.`);
          },
        },
        { plan: this.step ? plan.pinnedTo(this.step) : plan, maxSeconds: Math.max(1, limit - this.audioSeconds) },
      );
    } finally {
      this.inFlight.delete(controller);
    }
  }

  /** The end of one task_continue's audio (`is_final`); the task's last text also ends its encoder. */
  private async endTurn(turn: Turn): Promise<void> {
    if (!this.job || this.state === 'closed') return;
    await this.audio.endTurn(turn, this.state === 'finishing' && this.queuedTurns === 1);
  }

  /** After the last turn: the encoder's tail (when task_finish came after the last is_final), then task_finished. */
  private async finish(): Promise<void> {
    if (!this.job) return;
    await this.audio.endTask();
    this.send({ event: 'task_finished' });
    this.close(1000, 'task finished');
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
    this.audio.releaseHeld();
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
    this.audio.drop();
    if (terminate) this.ws.terminate();
    else this.ws.close(code, reason.slice(0, 120));
  }

  private onClose(code: number, reason: Buffer): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    if (this.state !== 'closed') {
      this.state = 'closed';
      for (const controller of this.inFlight) controller.abort();
    }
    this.audio.drop();
    // the stream's own line, as an HTTP request has its request line: the upgrade's id, how it ended, how long it ran
    this.logger.log(
      {
        request_id: this.requestId,
        session_id: this.sessionId,
        close_code: code,
        close_reason: reason.toString('utf8'),
        turns: this.turns,
        duration_ms: Date.now() - this.openedAt,
      },
      `stream ${this.sessionId} closed (${code})`,
    );
  }

  private touch(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.close(1000, 'idle timeout'), this.limits.idleMs);
    this.idleTimer.unref();
  }
}
