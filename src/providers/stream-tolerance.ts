import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { Counter } from 'prom-client';
import { requestFields } from '../config/logging';
import { MetricsService } from '../metrics/metrics.service';
import type { ChatChunk } from './provider-adapter';
import { UpstreamFailure } from './provider-adapter';
import type { SseEvent } from './sse';
import type { StreamStep } from './sse-reading';

/** Data events that are not JSON skipped in one stream; one more is a broken stream (decisions §3). */
export const MALFORMED_EVENTS_TOLERATED = 3;

const logger = new Logger('ChatStream');

/** Counted here, exported by the registry of the application that registers it (StreamToleranceMetrics). */
const MALFORMED_METRIC = 'svc_stream_malformed_events_total';
const malformedEvents = new Counter<'provider'>({
  name: MALFORMED_METRIC,
  help: 'Data events of upstream chat streams that were not valid JSON, by provider: skipped, up to 3 a stream (one more breaks it).',
  labelNames: ['provider'],
  registers: [],
});

const notJson = (data: string): boolean => {
  try {
    JSON.parse(data);
    return false;
  } catch {
    return true;
  }
};

/** Whether a chat chunk ends a choice: the answer is whole once one did (the usage chunk may still follow). */
const finishes = (chunk: ChatChunk): boolean =>
  Array.isArray(chunk.choices) &&
  chunk.choices.some(
    (choice) =>
      typeof choice === 'object' &&
      choice !== null &&
      typeof (choice as { finish_reason?: unknown }).finish_reason === 'string',
  );

/**
 * What a chat stream tolerates of its upstream (decisions §3), around an adapter's translator: a data event
 * that is not JSON is skipped (logged, counted) up to MALFORMED_EVENTS_TOLERATED, and `complete` says whether
 * a chunk with a `finish_reason` came, so a clean end without the end marker is a whole answer.
 */
export class ChatStreamTolerance {
  private skipped = 0;
  private finished = false;

  constructor(
    private readonly translator: (event: SseEvent) => StreamStep<ChatChunk>,
    private readonly provider: string,
    private readonly requestId: string,
  ) {}

  readonly translate = (event: SseEvent): StreamStep<ChatChunk> => {
    let step: StreamStep<ChatChunk>;
    try {
      step = this.translator(event);
    } catch (err) {
      // the JSON is parsed again only on this rare path: the common one costs nothing more
      if (!notJson(event.data)) throw err;
      return this.skip();
    }
    if (step !== undefined && step !== 'end' && !this.finished && finishes(step)) this.finished = true;
    return step;
  };

  readonly complete = (): boolean => this.finished;

  private skip(): undefined {
    this.skipped += 1;
    malformedEvents.inc({ provider: this.provider });
    if (this.skipped > MALFORMED_EVENTS_TOLERATED)
      throw new UpstreamFailure({
        kind: 'provider_error',
        code: 'invalid_response',
        message: `upstream sent ${this.skipped} data events that are not JSON`,
      });
    logger.warn(
      { ...requestFields(this.requestId), provider: this.provider },
      `${this.provider} sent a data event that is not JSON for ${this.requestId}; skipped (${this.skipped} of ${MALFORMED_EVENTS_TOLERATED} tolerated)`,
    );
    return undefined;
  }
}

/** Registers the stream tolerance's series with the application's registry (its owner registers it). */
@Injectable()
export class StreamToleranceMetrics implements OnModuleInit {
  constructor(private readonly metrics: MetricsService) {}

  onModuleInit(): void {
    if (!this.metrics.registry.getSingleMetric(MALFORMED_METRIC)) this.metrics.registry.registerMetric(malformedEvents);
  }
}
