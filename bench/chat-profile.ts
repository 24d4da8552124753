/**
 * What the chat profile (`npm run bench:chat -- --profile=…`) showed, and what was done about it:
 * written under the chat tables so the figures and their explanation travel together.
 */
export const CHAT_PROFILE_NOTE = `### Profile

The top costs \`--profile=one-step\` found per chat request (CPU profile of the gateway at c=20), and what was done:

1. **Express + router + @nestjs/core + rxjs + body-parser around the handler (about a third of the CPU; a 404
   cost about 2x a minimal Nest app).** \`POST /v1/chat/completions\` with a JSON body now takes a fast path
   (src/chat/chat-fast-path.ts): a \`request\` listener in front of Express on the same server that calls the
   same pieces in the same order (request id, metrics recorder, the one JSON body parser, the pino-http
   request line, key directory + rate limiter, failover scope functions shared with the interceptor, the
   validation pipe, the chat service, the error renderer shared with the filter); \`stream: true\` included.
   Other paths, a query string, an empty or non-JSON body go to Express unchanged. 4xx DomainErrors no
   longer capture a stack (about 20 % less CPU per 404).
2. **Write syscalls (writev of responses and upstream requests, one synchronous log write per line).**
   Socket writes are one per message already (the bare proxy pays them too). Logs now go through an
   asynchronous pino destination in blocks of about 4 KiB, flushed at least every 100 ms and
   synchronously at exit.
3. **Database work of the batch writers (pg + TypeORM, 8 to 25 %).** Usage records and failover events are
   one raw \`INSERT … SELECT * FROM unnest(…)\` per batch through the DataSource (no repository work, no
   RETURNING); the breaker's hot statements are raw SQL and its row is created only when missing; usage is
   flushed every 100 ms (smaller batches, shorter pauses). Request ids draw on a pooled random buffer.

Still open: with a failover-served request (failover, circuit open) the PostgreSQL side costs about
0.15 to 0.2 ms of CPU per request, mostly the webhook fan-out's scan of the last 30 s of \`gateway_events\`
(anti-join per batch) and a commit per awaited event INSERT; and old-space garbage lets RSS climb to
the V8 heap limit heuristics under load.
`;
