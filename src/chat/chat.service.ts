import { Injectable, Logger } from '@nestjs/common';
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { sendJson } from '../common/http/send-json';
import type { FailoverScope } from '../failover/failover-scope';
import { FailoverService } from '../failover/failover.service';
import { ChatChunk, ChatCompletion, ChatRequest, UpstreamFailure } from '../providers/provider-adapter';

interface PrimedStream {
  first: IteratorResult<ChatChunk>;
  rest: AsyncIterator<ChatChunk>;
}

/** nginx's status for a request whose client closed the connection first (usage records only). */
const CLIENT_CLOSED_REQUEST = 499;

const notSupported = (): UpstreamFailure =>
  new UpstreamFailure({ kind: 'http', status: 501, message: 'chat is not supported by this adapter' });

/** Chat completions through the failover core, JSON or server-sent events. */
@Injectable()
export class ChatService {
  private readonly logger = new Logger(ChatService.name);

  constructor(private readonly failover: FailoverService) {}

  /** Answers the request on `res` (the route writes its own body so streams and JSON share one path). */
  async respond(scope: FailoverScope, request: ChatRequest, res: ServerResponse): Promise<void> {
    scope.streaming = true;
    try {
      if (request.stream) await this.stream(scope, request, res);
      else await this.complete(scope, request, res);
    } catch (err) {
      // the client left before the answer: there is nobody to send an error to, and no server fault
      if (!scope.aborted) throw err;
      scope.finish({ status: CLIENT_CLOSED_REQUEST });
    }
  }

  private async complete(scope: FailoverScope, request: ChatRequest, res: ServerResponse): Promise<void> {
    const completion = await this.failover.execute<ChatCompletion>(scope, request.model, (adapter, ctx) =>
      adapter.chat ? adapter.chat({ ...request, model: ctx.model }, ctx) : Promise.reject(notSupported()),
    );
    scope.applyHeaders(res);
    sendJson(res, 200, { ...completion, provider: scope.served?.provider });
    scope.finish({ status: 200, usage: completion.usage });
  }

  /** Failover happens only until the first chunk is in hand; after that a fault ends the stream with an error event. */
  private async stream(scope: FailoverScope, request: ChatRequest, res: ServerResponse): Promise<void> {
    const primed = await this.failover.execute<PrimedStream>(scope, request.model, async (adapter, ctx) => {
      if (!adapter.chatStream) throw notSupported();
      const stream = await adapter.chatStream({ ...request, model: ctx.model }, ctx);
      const rest = stream[Symbol.asyncIterator]();
      return { first: await rest.next(), rest };
    });
    const provider = scope.served?.provider ?? '';
    res.statusCode = 200;
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('X-Accel-Buffering', 'no');
    scope.applyHeaders(res);
    res.flushHeaders();

    let usage = primed.first.done ? null : (primed.first.value.usage ?? null);
    const send = async (chunk: ChatChunk): Promise<void> => {
      // a client that leaves while its socket is full never drains: its abort ends the wait
      if (!res.write(`data: ${JSON.stringify({ ...chunk, provider })}\n\n`))
        await once(res, 'drain', { signal: scope.signal });
    };
    try {
      if (!primed.first.done) await send(primed.first.value);
      for (let next = await primed.rest.next(); !next.done; next = await primed.rest.next()) {
        if (next.value.usage) usage = next.value.usage;
        await send(next.value);
      }
      res.end('data: [DONE]\n\n');
      scope.finish({ status: 200, usage });
    } catch (err) {
      if (scope.aborted) {
        await primed.rest.return?.().catch(() => undefined);
        scope.finish({ status: CLIENT_CLOSED_REQUEST, usage });
        return;
      }
      const reason = this.failover.streamFailed(scope, err);
      this.logger.warn(`stream from ${provider} broke after the first byte (${reason}) for ${scope.requestId}`);
      const error = {
        message: `The upstream stream from ${provider} failed: ${reason}.`,
        type: 'upstream_error',
        param: null,
        code: 'upstream_stream_failed',
      };
      res.end(`data: ${JSON.stringify({ error, provider })}\n\n`);
      scope.finish({ status: 502, usage });
    }
  }
}
