import { Injectable } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { EnvironmentVariables } from '../config/env.schema';
import { GatewayConfig } from '../config/gateway-config';
import { sendJsonText } from '../common/http/send-json';
import { jsonWithProvider, sseChunkFrame } from '../common/http/sse-frame';
import type { Primed, ProxiedCall } from '../failover/proxied-call';
import { ChatChunk, ChatCompletion, ChatRequest, UpstreamFailure } from '../providers/provider-adapter';
import { ChatContinuation } from './chat-continuation';
import { DeliveredText } from './continued-text';

const notSupported = (): UpstreamFailure =>
  new UpstreamFailure({ kind: 'http', status: 501, message: 'chat is not supported by this adapter' });

/** Chat completions through the failover core, JSON or server-sent events. */
@Injectable()
export class ChatService {
  constructor(
    private readonly env: EnvironmentVariables,
    private readonly gateway: GatewayConfig,
  ) {}

  /** Answers the request on `res` (the route writes its own body so streams and JSON share one path). */
  respond(call: ProxiedCall, request: ChatRequest, res: ServerResponse): Promise<void> {
    return request.stream ? this.stream(call, request, res) : this.complete(call, request, res);
  }

  private async complete(call: ProxiedCall, request: ChatRequest, res: ServerResponse): Promise<void> {
    const completion = await call.run<ChatCompletion>(request.model, (adapter, ctx) =>
      adapter.chat ? adapter.chat({ ...request, model: ctx.model }, ctx) : Promise.reject(notSupported()),
    );
    call.bill({ usage: completion.usage });
    sendJsonText(res, 200, jsonWithProvider(completion, call.scope.served?.provider ?? ''));
  }

  /**
   * Server-sent events; after the first chunk a fault is continued on a later step (ChatContinuation), or, when
   * none continues it, ends the stream with an error event.
   */
  private stream(call: ProxiedCall, request: ChatRequest, res: ServerResponse): Promise<void> {
    let provider = '';
    const delivered = new DeliveredText();
    const stallMs = this.env.SVC_HTTP_STALL_MS;
    const send = (data: string): void | Promise<void> => {
      // a client that stops reading is dropped after the stall limit; one that leaves ends the wait by its abort
      if (!res.write(data)) return call.drained(stallMs);
    };
    return call.stream<ChatChunk, Primed<ChatChunk>>(
      request.model,
      async (adapter, ctx) => {
        if (!adapter.chatStream) throw notSupported();
        const stream = await adapter.chatStream({ ...request, model: ctx.model }, ctx);
        const rest = stream[Symbol.asyncIterator]();
        return { first: await rest.next(), rest };
      },
      {
        open: (primed) => {
          provider = call.scope.served?.provider ?? '';
          res.statusCode = 200;
          res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
          res.setHeader('Cache-Control', 'no-cache');
          res.setHeader('X-Accel-Buffering', 'no');
          // the headers go out with the first event, in one write; alone only when there is none
          if (primed.first.done) res.flushHeaders();
        },
        write: (chunk) => {
          if (chunk.usage) call.bill({ usage: chunk.usage });
          delivered.see(chunk);
          return send(sseChunkFrame(chunk, provider));
        },
        continueAfter: async (_err, reason) => {
          const continued = await new ChatContinuation(this.gateway, call, request, delivered).after(reason);
          // the chunks from here on name the provider that continues the answer
          if (continued) provider = call.scope.served?.provider ?? provider;
          return continued;
        },
        end: () => void res.end('data: [DONE]\n\n'),
        broke: (reason) => {
          const error = {
            message: `The upstream stream from ${provider} failed: ${reason}.`,
            type: 'upstream_error',
            param: null,
            code: 'upstream_stream_failed',
          };
          res.end(`data: ${JSON.stringify({ error, provider })}\n\n`);
        },
      },
    );
  }
}
