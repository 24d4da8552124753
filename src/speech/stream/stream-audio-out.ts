import type { PlannedStep } from '../../failover/chain';
import { openEncoder, type StreamEncoder } from '../../audio/pool/pool-jobs';
import type { SpeechJob } from '../speech-job';
import type { StreamConnection } from './stream-connection';
import type { ExtraInfo } from './stream-replies';

/** The text of one `task_continue`: its audio ends with one `is_final` message, and its usage is recorded under its own request id. */
export interface Turn {
  /** `<trace_id>_<n>` for the n-th task_continue: every usage record of its pieces has this id. */
  requestId: string;
  characters: number;
  /** Pieces not yet spoken: the chunks of the last one are held back so the last is known. */
  piecesLeft: number;
  /** Audio bytes sent for this text, and seconds of audio made for it. */
  bytes: number;
  seconds: number;
}

/**
 * A stream's audio on its way out: pcm through the task's one continuous pcm or FLAC encoder (mp3 relayed as it
 * is), each turn's last chunk held back so it carries `is_final` and MiniMax's `extra_info`, and a client that
 * stops reading closed instead of buffered without bound.
 */
export class StreamAudioOut {
  /** pcm and flac only, made when the first audio arrives and dropped when the task ends: a held stream costs no encoder. */
  private encoder: StreamEncoder | null = null;
  private pendingBytes = Buffer.alloc(0);
  /**
   * The newest audio of a turn's last piece, not yet sent: a chunk is known to be its turn's last only when the
   * piece ends, and `is_final` goes on that chunk (with MiniMax's `extra_info`).
   */
  private held: { audio: Buffer; turn: Turn; served: PlannedStep | null } | null = null;
  /** The task's job (its output settings), once task_start was accepted. */
  job: SpeechJob | null = null;
  /** The step serving the task now: each audio message names the one that made its audio. */
  served: PlannedStep | null = null;

  /** `keyId`: the stream's key, whose turn its encoder takes in the audio pool. */
  constructor(
    private readonly connection: StreamConnection,
    private readonly keyId: string,
  ) {
    connection.onClosed(() => this.drop());
  }

  /** Raw s16le from the provider → the task's one continuous pcm or FLAC encoder → hex audio messages. */
  async pcm(bytes: Buffer, turn: Turn): Promise<void> {
    // the step that made these samples, whatever serves by the time the encoder gives them back
    const { job, served } = this;
    if (!job || this.connection.closed) return;
    const { format, sampleRate, channels, bitrate } = job.output;
    // formats with a header or a state over the whole stream (FLAC, Ogg Opus) have one encoder for the task
    const made = format === 'flac' || format === 'opus' || format === 'pcmu_raw' ? format : 'pcm';
    this.encoder ??= openEncoder({ format: made, sampleRate, channels, bitrate }, undefined, {
      key: this.keyId,
    });
    const encoder = this.encoder;
    const frame = 2 * channels;
    const all = Buffer.concat([this.pendingBytes, bytes]);
    const usable = all.length - (all.length % frame);
    this.pendingBytes = all.subarray(usable);
    if (usable === 0) return;
    const samples = new Int16Array(all.buffer.slice(all.byteOffset, all.byteOffset + usable));
    await this.deliver(await encoder.push(samples), turn, served);
  }

  /**
   * Audio goes out as it is made, except in a turn's last piece: there each chunk waits for the next one (or for
   * the end of the piece), so the turn's last chunk is known and carries `is_final`.
   */
  async deliver(audio: Buffer, turn: Turn, served = this.served): Promise<void> {
    if (audio.length === 0) return;
    if (turn.piecesLeft > 1) return this.sendAudio(audio, turn, false, served);
    // the older chunk goes first: a failure or shutdown while it waits for the client must not send this one before it
    const previous = this.held;
    this.held = null;
    if (previous) await this.sendAudio(previous.audio, previous.turn, false, previous.served);
    this.held = { audio, turn, served };
  }

  /**
   * The end of one task_continue's audio: the held chunk, with `is_final` and MiniMax's `extra_info`. When it is
   * the task's last text (`taskEnds`), the encoder's tail (FLAC's last block) joins it. A text that made no audio
   * (only spaces, say) still gets its `is_final` message, with empty audio: MiniMax's clients wait for it.
   */
  async endTurn(turn: Turn, taskEnds: boolean): Promise<void> {
    const held = this.held?.turn === turn ? this.held : null;
    this.held = null;
    const tail = taskEnds ? await this.endEncoder() : Buffer.alloc(0);
    const audio = held ? Buffer.concat([held.audio, tail]) : tail;
    await this.sendAudio(audio, turn, true, held?.served ?? this.served);
  }

  /** After the last turn, whose `is_final` went out before task_finish: the encoder's last block, if any (is_final false). */
  async endTask(): Promise<void> {
    const tail = await this.endEncoder();
    if (tail.length > 0) await this.sendAudio(tail, null, false);
  }

  /** A task cut short (failure, shutdown) still delivers the audio it held back, not as the final message. */
  releaseHeld(): void {
    if (this.held && !this.connection.closed && !this.connection.keyGone())
      this.sendNow(this.held.audio, this.held.turn, false, this.held.served);
    this.held = null;
  }

  /** The encoder's worker slot goes back at once (the connection went). */
  private drop(): void {
    this.encoder?.release();
    this.encoder = null;
  }

  /** The encoder's last bytes (FLAC's last, short block); the encoder is gone after. */
  private async endEncoder(): Promise<Buffer> {
    const encoder = this.encoder;
    this.encoder = null;
    return encoder ? await encoder.end() : Buffer.alloc(0);
  }

  /** Waits while the client's buffer is full (a client that stops reading is closed); a deleted key gets no more audio. */
  private async sendAudio(audio: Buffer, turn: Turn | null, isFinal: boolean, served = this.served): Promise<void> {
    if (audio.length === 0 && !isFinal) return;
    await this.connection.writable();
    // a key deleted meanwhile gets no more audio, whether or not its client sends another message
    const gone = this.connection.keyGone();
    if (gone) throw gone;
    this.sendNow(audio, turn, isFinal, served, true);
  }

  private sendNow(audio: Buffer, turn: Turn | null, isFinal: boolean, served: PlannedStep | null, touch = false): void {
    const { job } = this;
    if (turn) turn.bytes += audio.length;
    this.connection.send(
      {
        event: 'task_continued',
        request_id: turn?.requestId ?? null,
        data: { audio: audio.toString('hex') },
        is_final: isFinal,
        ...(isFinal && turn && job ? { extra_info: extraInfo(turn, job) } : {}),
        provider: served?.provider ?? null,
        fallback_level: served?.level ?? null,
      },
      touch,
    );
  }
}

function extraInfo(turn: Turn, job: SpeechJob): ExtraInfo {
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
