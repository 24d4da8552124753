import type { WebSocket } from 'ws';
import { DomainError, toDomainError } from '../../common/errors/domain-error';
import type { PlannedStep } from '../../failover/chain';
import type { FailoverService } from '../../failover/failover.service';
import { openCall, withCall } from '../../failover/proxied-call';
import type { TraceOrigin } from '../../tracing/request-trace';
import type { AuthenticatedKey } from '../../keys/key-directory';
import { audioTooLong, minimumAudioSeconds } from '../audio-cap';
import { ASYNC_TEXT_LIMIT, characterCount, SpeechJob } from '../speech-job';
import type { PrimedAudio, SpeechService } from '../speech.service';
import type { VoicePlan } from '../../voices/voice-plan';
import { StreamAudioOut, type Turn } from './stream-audio-out';
import { type ConnectionLimits, type FailCode, StreamConnection } from './stream-connection';
import { textPieces } from './text-pieces';
import { ClientMessage, parseClientMessage, TaskStartMessage } from './stream-messages';
import { outOfOrder, streamJob, type StreamState } from './stream-order';

export interface StreamLimits extends ConnectionLimits {
  /** Seconds of audio one task may produce (SVC_MAX_AUDIO_SECONDS). */
  maxAudioSeconds: number;
}

/** The fastest `speed` a task may ask for: the estimate's assumption while task_start is still being checked. */
const FASTEST_SPEED = 2;

/** Text received and not yet spoken, at most: a client sending faster than synthesis gets text_too_long, not an unbounded queue. */
export const MAX_QUEUED_CHARS = ASYNC_TEXT_LIMIT;

/**
 * The speech task of one WebSocket connection, in MiniMax's event protocol (decisions §7): the order of its
 * messages, its text queued as turns, each sentence group through the failover core, and the audio cap. The
 * socket itself (messages out, idle timer, backpressure, the close) is its StreamConnection's.
 */
export class SpeechStreamSession {
  /** Where the task is in the protocol; `closed` once the connection is. */
  private phase: Exclude<StreamState, 'closed'> = 'idle';
  private job: SpeechJob | null = null;
  /** Seconds of audio this task has produced, and the least its queued text will still make: both count against the cap. */
  private audioSeconds = 0;
  private promisedSeconds = 0;
  /** The task's steps and their voices, decided at task_start. */
  private plan: VoicePlan | null = null;
  /** The step that serves the task: the one that made its first audio, or the one that continued it after a break. */
  private step: PlannedStep | null = null;
  private work: Promise<void> = Promise.resolve();
  private readonly connection: StreamConnection;
  private readonly audio: StreamAudioOut;
  private queuedChars = 0;
  /** Turns queued or being spoken: the one running is the task's last once task_finish came and this is 1. */
  private queuedTurns = 0;

  constructor(
    ws: WebSocket,
    readonly sessionId: string,
    /** The upgrade's `req_` id (on its 101, in this stream's logs, and as `trace_id` on every message). */
    readonly requestId: string,
    /** The stream's key as the key directory knows it now (see StreamConnection). */
    currentKey: () => AuthenticatedKey | null,
    private readonly speech: SpeechService,
    private readonly failover: FailoverService,
    private readonly limits: StreamLimits,
    /** Where each turn's SERVER span comes from (decisions §12); null while traces are off. */
    private readonly traceOrigin: TraceOrigin | null = null,
  ) {
    this.connection = new StreamConnection(ws, sessionId, requestId, currentKey, limits);
    this.audio = new StreamAudioOut(this.connection, currentKey()?.id ?? '');
    this.connection.onMessage((data, isBinary) => this.onMessage(data, isBinary));
  }

  private get state(): StreamState {
    return this.connection.closed ? 'closed' : this.phase;
  }

  /** Server shutdown: close with 1001 and a reason. */
  shutdown(): void {
    this.audio.releaseHeld();
    this.connection.close(1001, 'server shutting down');
  }

  /** Graceful shutdown: the text queued so far is spoken (a finishing task completes), then 1001. */
  async drain(): Promise<void> {
    await this.work;
    this.shutdown();
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    const gone = this.connection.keyGone();
    if (gone) return this.fail(gone, 1008);
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
        this.phase = 'starting';
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
        this.phase = 'finishing';
        this.work = this.work.then(() => this.finish()).catch((err: unknown) => this.fail(err, 1011));
        return;
    }
  }

  private async start(body: TaskStartMessage): Promise<void> {
    const job = streamJob(body);
    // checks the model and the entry voice now, so a bad task_start fails before any text arrives; the chain is the key's as it is now
    const plan = await this.speech.plan(this.connection.key(), job);
    this.plan = plan;
    this.job = job;
    this.audio.job = job;
    if (this.state === 'closed') return;
    if (this.phase === 'starting') this.phase = 'started';
    const first = this.failover.firstAvailable(plan.steps);
    // request_id: the stream's usage records are under `<it>_<n>` for the n-th task_continue (GET /v1/usage?request_id= finds them all)
    this.connection.send({
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
      requestId: `${this.requestId}_${++this.connection.turns}`,
      characters,
      piecesLeft: pieces.length,
      bytes: 0,
      seconds: 0,
    };
    this.queuedChars += text.length;
    this.queuedTurns += 1;
    // a failure the client caused (the audio cap, a deleted key) is 1008; the provider's is 1011
    const closeCodeOf = (err: unknown): FailCode =>
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
   * One sentence group. The first decides the provider (failover allowed); later ones go to the same step, and to the
   * steps after it only when it fails. A provider that breaks after its audio began is continued on the next step
   * that can speak, from the start of the sentence that was being spoken (decisions §7, speech that does not break);
   * from then on the task is that step's. MP3 is asked of the provider as it is (its frames stand alone, so
   * sentences join into one stream of frames, as on MiniMax's own stream) and relayed untouched; FLAC (one header
   * per stream) and pcm come as pcm through the session's encoder, so a change of provider is not heard in the format.
   */
  private async synthesize(text: string, turn: Turn): Promise<void> {
    const plan = this.plan;
    if (!this.job || !plan || this.state === 'closed') return;
    const limit = this.limits.maxAudioSeconds;
    const relay = this.job.output.format === 'mp3';
    const job: SpeechJob = { ...this.job, text, output: { ...this.job.output, format: relay ? 'mp3' : 'pcm' } };
    const { sampleRate, channels } = job.output;
    let bitrate = job.output.bitrate;
    /** Seconds of the serving attempt's audio sent so far (where a break fell). */
    let heardSeconds = 0;
    const emit = (bytes: Buffer): Promise<void> => {
      // relayed mp3 is constant-bitrate: its length in seconds follows from its bytes
      const seconds = relay ? (bytes.length * 8) / bitrate : bytes.length / (2 * channels * sampleRate);
      this.audioSeconds += seconds;
      turn.seconds += seconds;
      heardSeconds += seconds;
      if (this.audioSeconds > limit) throw audioTooLong(limit, 'of this stream task');
      return relay ? this.audio.deliver(bytes, turn) : this.audio.pcm(bytes, turn);
    };
    // closing the connection cancels the call
    const call = openCall(
      this.failover,
      turn.requestId,
      this.connection.key(),
      'speech',
      this.connection.signal,
      this.traceOrigin,
    );
    const maxSeconds = Math.max(1, limit - this.audioSeconds);
    const steps = this.step ? plan.from(this.step) : plan;
    /** The step that serves now speaks the rest of the task, and names the audio messages from here on. */
    const servedBy = (primed: PrimedAudio): void => {
      bitrate = primed.audio.bitrate ?? bitrate;
      this.step = plan.steps.find((s) => s.level === call.scope.served?.level) ?? this.step;
      this.audio.served = this.step;
    };
    // a failure throws back here (the session closes with it), once the call has recorded it
    await withCall(call, () =>
      this.speech.synthesize(
        call,
        job,
        {
          open: servedBy,
          write: emit,
          // no later step could speak the rest: named, as the SSE paths name it (never internal_error)
          broke: (reason, _status, err) => {
            if (err instanceof DomainError) throw err;
            const provider = call.scope.served?.provider ?? 'the provider';
            throw new DomainError('upstream_stream_failed', `The upstream stream from ${provider} failed: ${reason}.`);
          },
        },
        {
          plan: steps,
          maxSeconds,
          heard: {
            seconds: () => heardSeconds,
            continued: (next) => {
              servedBy(next);
              heardSeconds = 0;
            },
          },
        },
      ),
    );
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
    this.connection.send({ event: 'task_finished' });
    this.connection.close(1000, 'task finished');
  }

  private fail(err: unknown, code: FailCode): void {
    if (this.state === 'closed') return;
    // the audio held back for `is_final` still goes out, before the failure
    this.audio.releaseHeld();
    this.connection.fail(err, code);
  }
}
