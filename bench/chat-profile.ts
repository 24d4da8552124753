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

Then, on a slower 2-core machine (its bare proxy did 7,700 req/s where the first one did 20,500):

4. **The upstream call and the client write: undici about 24 %, the response write about 14 % (mostly the
   \`writev\` system call), Node's HTTP about 13 %.** The bare proxy pays each of these once per request too,
   so they are the floor, not a target. What the gateway adds on top, in order: the request log line
   (pino, pino-http, sonic-boom: about 9 %; pino's \`redact\` paths were replaced by the request serializer,
   which writes the credential as \`[redacted]\`, saving about 3 %), the JSON body parser (about 7 %), the
   failover core (about 5 %), the chat service, the key lookup (SHA-256) and prom-client (1 to 3 % each).
5. **A failover-served request (failover, circuit open) paid a database round trip of its own.** Its
   event is still stored before the response (decisions §8), but at most two INSERTs are in flight and the
   events of the requests finishing meanwhile share the next one; they go on the pg pool directly, as a
   VALUES list (the driver's array escaping cost about 2 µs per row). The webhook fan-out no longer rescans
   the last 30 s of events against a marker table twice a second: it follows a cursor over (transaction
   id, event id), one index range scan per tick. \`UpstreamFailure\` no longer captures a stack, and a
   request's failover scope no longer makes an AbortController unless a stream asks for its signal.
6. **Memory: peaks of 200 to 270 MB RSS around about 50 MB of live heap.** V8's young generation (up to
   3 × 16 MB) and its old-space growth factor were the difference. \`npm start\` and the Dockerfile now run
   \`node --max-semi-space-size=8 --heap-growing-percent=50\`: about 150 MB under this load. The offline
   speech engine (about 90 MB) is loaded by its first use instead of at boot.

7. **The batch writers' driver work (pg and pg-protocol about 4 %, more than the INSERTs' share of the
   time).** A VALUES list with a parameter per value made the driver serialise 14 parameters a row: the
   rows now go as one JSON array parameter read by \`jsonb_array_elements\` (client CPU about 4 µs a row
   instead of 13 to 20, half the bytes, a third of the time per batch, measured with 200-row batches).
   A failing primary's breaker count (failover mode: the threshold is never reached) was a read and a
   compare-and-set per request; count-only changes now share one write every 50 ms (status changes are
   still written at once).
8. **Smaller items.** Plain UTF-8 JSON bodies are read with raw-body directly (body-parser's type,
   charset and decoder work was about 4 %; it still reads every other body); the key's SHA-256 uses the
   one-shot \`crypto.hash\` (half the cost of a Hash object); an attempt's timeout is one promise instead
   of a race plus a finally; log lines leave in 8 KiB blocks.
9. **Reading the profile with the process's own CPU time beside it.** \`/proc\` user and system time per
   request (one step at c=20, this machine): bare proxy about 38 + 18 µs, logged proxy about 110 + 30 µs,
   gateway about 175 to 200 + 35 µs. The profiler's \`writev\` share (about 20 %) is larger than the system time
   it stands for: its samples also fall while the gateway is descheduled inside the call (the write wakes the
   receiver, which takes the core on this 2-core machine), so the JavaScript costs above are a larger share of
   the real CPU than the profile says. Removing the pino-http line from the logged proxy saved about 25 µs a
   request, and its \`AbortSignal.timeout\` another 13 to 18 µs: the floor is mostly the required work itself.
   The batch INSERTs are now named statements, so PostgreSQL parses and plans them once per connection (about
   50 µs of its CPU per batch, measured on a 6-row event INSERT).

10. **Session 10: what was left per request (profile of one step at c=20, µs per request under the
   profiler).** The request log line's serializers copied every request field and every response header
   before keeping a few (\`getHeaders\` 2.5, pino's stringify 5.4): they now read the raw request and response
   (\`wrapSerializers: false\`; the line keeps content type and length, provider and fallback level). The
   completion was copied with \`provider\` and serialised again (\`sendJson\` 4.5, \`complete\` 3.8): it is now
   written from the upstream's text with the field appended, as stream chunks are. The upstream body was read
   through an async iterator (1.7): now by events. SSE decoding, the coalescer's condition key (JSON.stringify,
   2.0 on a failover), the failover counter's label hashing (1.3) and the circuit view read on every request past
   an open circuit (for a Retry-After needed only when no step is tried) went too. Measured against the build
   before them in one run (\`npm run bench:chat-ab\`, 10 interleaved 4 s rounds): one step c=20 107.9 %, c=1
   101.6 %, streaming c=20 110.5 %. What remains above 2 µs: the upstream reply's JSON.parse (7.4), the
   AbortController of an attempt (4.7, the upstream call's cancel), the async hooks of the request context
   (nestjs-pino's AsyncLocalStorage: about 8 over all promises), prom-client's histogram (3.0), the request body's
   parse and checks (7.5), the key's SHA-256 (2.5).

11. **Circuit open against one step.** Profiled side by side under the same alternating load (two gateways,
   eight rounds), the circuit-open gateway's busy time per request was 225 µs against one step's 231: what it
   adds (the alert header 1.3 µs, the window count 0.9, a usage row with two attempts 0.5) is within the noise.
   Alternating only these two gateways, the circuit-open share of one step was 93 % (median of 24 rounds of
   4 s, 79 % to 109 %) and 91 to 106 % in 10 s cells; the full run's figure (Targets) is lower, and moved from
   99 % to 78 % between two runs of the same build.
12. **Session 12: the async hooks of the request context.** nestjs-pino bound each request's logger in an
   AsyncLocalStorage (its middleware on Express routes, the chat fast path on its own); on Node 20 the first
   \`run\` turns on a promise hook for every promise of the process for good (\`promiseInitHook\`,
   \`trackPromise\`, \`lookupPublicResource\`, \`_propagate\`: about 19 µs of a streamed request under the profiler,
   4 % of its samples). Nothing runs in one now: nestjs-pino's middleware is applied to no route, the request line is
   written by the same pino-http options from a middleware of our own (and the fast path), and the few lines written
   while serving a request are given its \`request_id\` (test/request-logs.e2e-spec.ts checks both, and that no
   promise hook is on after Express and fast-path requests). Two gateways side by side, with and without the
   hook (6 interleaved 3 s rounds): one step c=20 5,466 against 4,987 req/s (109.6 %), streaming 4,026 against
   3,760 (107.1 %), p50 at c=20 3.24 against 3.74 ms; \`npm run bench:chat-ab\` against the build before (8
   rounds on a noisy host): one step c=20 113.5 %, c=1 102.1 %, streaming 103.9 %.
13. **Session 13: circuit open against one step, and the attempt's cancel.** Two profiled gateways side by side
   (one step, circuit open; eight alternating 3 s rounds at c=20) put the circuit-open request at 19.6 µs more busy
   time (208.1 against 227.7 µs): building the alert header's JSON for every request (\`servedHeaders\` 1.7), its
   validation and \`setHeader\` (1.2), the coalescer's joined condition key (0.9), the usage row's second attempt
   (0.7), the rest spread thin. The served headers are now made once per distinct set and shared
   (src/failover/failover-headers.ts), the coalescer finds a window through one Map level per field, and a counted
   failover returns nothing to await. Alternating the two gateways (12 rounds of 3 s): circuit open 89.3 % of one
   step at c=20 before (CPU 186 against 220 µs a request), 102.2 % after (196 against 193 µs); 97.9 % at c=1.
   Every attempt made an AbortController for its cancel (\`createAbortSignal\` 3.6 µs a request, undici's
   \`addEventListener\` on it 1.1): on Node 20 one costs about 2 µs to make and 1 µs a listener. An attempt now
   cancels through \`CallAbort\` (src/common/call-signal.ts, a flag and a listener array that undici accepts as its
   signal): \`npm run bench:chat-ab\` against the build before it (10 rounds of 3 s): one step c=20 107.3 %, c=1
   100.5 %, streaming 101.5 %.
14. **Session 14: circuit open and one step in one process.** Two gateway processes, one per mode, measure the
   path's cost plus each process's history: profiled side by side (eight alternating 3 s rounds at c=20) the
   circuit-open gateway spent 184.8 µs of busy time a request against the one-step gateway's 168.8, 5.3 µs of it
   inside undici, whose calls are the same in both (the same fake, the same pool settings; the circuit-open process
   had 500s from the failing fake while its circuit tripped). One process serving both (a second key whose first
   step is the tripped \`dead\` provider; 2 s slices in ABBA order, the profile's samples split by slice): 160.1
   against 163.5 µs a request (+2.1 %), 5,479 against 5,379 req/s (98.2 %). The 3.4 µs: the answer's larger head
   (\`writev\` 1.8, the alert header's bytes), garbage collection (0.9), the served-header lookup (0.5, its joined
   key: now one Map level per field), the chain walk, the coalescer's count and the skipped attempt's record
   (about 0.3 each). Issue 16's circuit-open targets now compare those two keys of one process, in the same
   interleaved rounds; the separate process stays beside them for information. On this host one 1 s slice at
   c=20 moves by 20 % from the next, so a ratio of 6 to 12 rounds of 3 s carries about 4 % of noise.

15. **Session 15: the logged proxy corrected, and what the gateway adds to it.** The logged proxy wrote its request
   line with pino-http's default serializers (every request and response header copied, the credential
   included) and made an \`AbortSignal.timeout\` per upstream call: neither is how the gateway (or any gateway that
   must not log a credential) does that work. It now writes the gateway's own request line (pino-http with
   \`httpLoggerOptions\`) and times each call with a timer and a \`CallAbort\`, as the gateway does. Measured in 10
   interleaved 3 s rounds on this machine beside the chunked bare proxy: the old logged proxy 53.2 %, the same
   work done this way 66.5 % (the gateway 38.6 % in that run), and once in bench/logged-proxy.ts 67.6 % (the gateway 50.1 %).
   So the logged proxy is about a third faster than it was, and the gateway reaches about three quarters of it.
   Where the difference lies (\`perf record\` of both at c=20 for 10 s, this host in a slow spell, µs of CPU a
   request): 346 against 282. The kernel's share is the same (62 against 60). The rest: V8's builtins +20
   (megamorphic property loads and stores, promise jobs), V8's runtime +9, garbage collection +8 (a major GC's
   concurrent marking only in the gateway), the gateway's own JavaScript +15, spread over the fast path, the failover
   core, the attempt, the adapter, the request's checks and the usage row, none above 3 µs.
   What was tried and left:
   - the request line written by one pino call on the root logger, without pino-http's child logger: 2,596
     against 2,597 req/s (12 rounds);
   - V8's young generation at 16 MB, with and without old-space growth of 100 %: within a few per cent, inside
     the noise, so not worth the memory;
   - knocking single pieces out of a scratch build (12 rounds each): the figures moved by up to 12 % for work a
     microbenchmark puts at 0.7 µs a request (the metrics: a \`close\` listener, a counter and a histogram
     observation), so a knockout on this host cannot show a piece of 1 or 2 % of a request.

16. **Session 16: the database's share, and the usage writer's loop.** With the CPU of each process's PostgreSQL
   backends counted beside its own (one step at c=20, interleaved 3 s rounds), the gateway's backends used 42.6 µs a
   request against the logged proxy's 16.2, for the same one usage row a request. PostgreSQL's statement log over a
   5 s load showed why: 586 usage INSERTs of about 20 rows each, some 100 a second. The writer wrote whatever arrived
   during an INSERT as soon as that INSERT ended, so under load it never waited for its 100 ms tick, and every
   INSERT was a commit, a bind of its JSON and a round trip of the driver. It now writes what was buffered when a
   flush starts, and what arrives meanwhile waits for the next tick (or a full batch of 500); a flush waiting for
   its turn is shared, where each record past a full batch had chained one more (src/usage/usage.writer.spec.ts). The
   same load then made about 10 INSERTs a second. Two gateways alternated, this build against the one before (10
   rounds of 3 s, c=20): 104.4 % of the req/s, the backends' CPU 33.8 against 43.4 µs a request.
   What the rest of the database's share is: the INSERT itself, about 15 µs a row in PostgreSQL (measured alone,
   300-row batches: the JSON's parse, 14 columns, and about 5 µs for the \`(key_id, request_id)\` index the usage
   lookups need; a \`json\` parameter instead of \`jsonb\` was slower, 30 against 20 µs a row with the client's work).
   Measured and left: heap allocation per request, sampled by V8 with the objects that died counted (45 KB in the
   gateway, 37 KB in the logged proxy; both lose 4.4 KB a line to sonic-boom flattening its pending string to
   measure it); V8's default heap flags instead of \`npm start\`'s (101.2 % of the req/s, 12 rounds, inside the
   noise; 53 % more peak RSS); scavenges without parallel helper threads (their pauses wait for a core on this
   2-core machine: 318 against 409 ms of pause in 8 s, inside the noise in req/s).
17. **Session 17: usage rows by COPY, and the c=1 figures measured in turns.** \`npm run bench:usage-write\` times
   the writer's two ways in on the migrated \`usage_records\` table, 500-row batches over one connection: the
   server process spent 6.6 µs of CPU a row on \`INSERT … SELECT FROM jsonb_array_elements($1)\` and 4.8 on \`COPY … FROM
   STDIN\`, the client waited 8.2 and 7.5 µs a row (its section below; a first trial through psql, 12.3 against 6.5 µs,
   had charged the INSERT with parsing its rows as one literal of SQL). The gateway now writes its batches with COPY
   (pg-copy-streams) on a PostgreSQL server, and keeps the INSERT on the embedded PGlite, whose socket has no COPY
   (tried: it closes the connection); a batch the database refuses for its rows still goes row by row. The logged
   proxy writes the same way, so it stays the floor of the same work. Against the build before (interleaved, focused
   A/B): 109.1 % of the req/s at c=20 (8 rounds), 104.6 % at c=1 (6 rounds), the gateway's own CPU 150 against 165
   µs a request at c=20 (289 against 306 at c=1, where the p50 did not move: the saving is after the answer), so
   most of the gain is the gateway's: the batch as COPY text costs it less than one JSON array bound as a parameter.
   Tried and dropped: each record written at once as its COPY line into an off-heap buffer, so no record is
   kept on the heap until the flush (the scavenges' survivors are mostly these records): 95.8 % of the req/s of the
   kept version, the line made a request costing more than the copying it saved; the request body read from the
   request's buffer a tick after the headers instead of through raw-body's stream events (the c=1 timeline put
   21 µs between the key and the body): 99.1 %, reverted. The c=1 timeline of a one-step request, medians from the
   request's handler (µs): key admitted 9, body parsed 30, request line 35, pipes 42, chat request parsed 46,
   failover core 49, adapter 52, upstream request written 62, upstream headers 241, body 249, answer written 306
   (the write itself 38): 62 µs before the upstream call is on its socket and 65 after its headers.
   The c=1 targets (circuit open, first byte, added p50) are now judged by paired requests (bench/paired.ts): every
   request of the compared entries taken in turns, one at a time, where the 3 s rounds put the two sides of a figure
   on different moments of the host. Two trials before this run: circuit open 104.1 and 105.5 % (10 blocks: 101.4 to
   108.9 %), first byte +0.14 ms both (blocks 0.11 to 0.17), added p50 0.30 and 0.28 ms (logged proxy 0.26, bare
   proxy 0.18 to 0.19), where the rounds' medians of the same had run from 92.9 to 96.3 %, 0.12 to 0.25 ms and 0.28
   to 0.48 ms over sessions 14 to 16.

18. **Session 18: the upstream reply without a stream, and the young generation.** Every JSON reply of an upstream
   call (each chat completion, and each adapter's \`json\` call) was read through undici's \`request\`: an AsyncResource,
   a headers object, a Readable for the body with its data, end and close listeners, and a second promise.
   \`UpstreamClient.text\` (src/providers/http.ts) reads it through undici's \`dispatch\` with a handler of its own,
   with the same caps, error-body message, cancel and transport-fault outcomes (unit tests for each). Heap
   allocation per one-step request at c=20 (V8's sampling heap profiler with the objects that died counted, and
   \`--trace-gc\` over 5 s cells): 44.5 KB before, 40.1 KB after. Those cells also showed what the scavenges cost the
   main thread a request: 12.3 µs with \`npm start\`'s 8 MB semi-space (116 scavenges in 5 s and a mark-compact), 8.0
   µs at 16 MB (50, none), 3.8 µs at 32 MB; one gateway each way, 10 rounds: 104.7 % of the req/s at 16 MB, the 3 s
   cells' p99 13.06 against 12.17 ms. Tried and dropped: 16 MB in \`npm start\`. The gateway then idled about 27 MB
   larger (\`npm run bench:memory\`, DATABASE_URL, idle after the first speech: 324 MB against 296, over the 300 MB the
   README promises); two full runs were made with it (session 18's first two, below), this section's is the third,
   with 8 MB. In all three this build against the one before it (BENCH_BASELINE, both under the same flags):
   one step 106.7 % in the third, 113.1 and 120.6 % in the first two; failover 112.3, 116.1 and 106.7 %; streaming
   104.4, 103.7 and 99.2 % of the req/s at c=20 (medians of 12 rounds, whose per-round ratios spread over tens of
   per cent).
   Tried and dropped: the usage batch's COPY text made in slices of 50 rows with a turn of the event loop between
   them (a 500-row batch is about 0.9 ms of JavaScript at once): in 10 rounds against the build before it, neither
   the p99 nor the req/s moved out of the noise.
   The c=1 timeline of a request (a scratch build with time marks, medians over 3,000 requests on a quiet spell,
   µs): the request's handler to its body parsed 16.6 (of it the key, the request id and the metrics' listener about
   10), the pipes and the chat request's checks 7.6, on to undici's dispatch 7.7, the upstream's headers 87.7, its
   body 2.2, on to the answer's write 12.9, the write and what follows it 24.6; on a slow spell every figure about
   doubled.

19. **Session 19: chat streams without a response stream.** Per request, in one process of each (main-thread CPU
   from /proc over cells of plain and streaming bodies taken in turns, c=20), a streamed one-step request cost the
   gateway 95 to 135 µs more than a plain one, the logged stream proxy 41 to 66 µs more. Two profiled gateways, one
   per body, put the gateway's extra per streamed request in undici (+23.8 µs: \`request\`'s headers object, the
   Readable body, its async iterator and end-of-stream wiring), the SSE parser (+8), the relay's promises
   (runMicrotasks +5.5) and the collector (+6.5). A chat stream (OpenAI and Anthropic) is now read through undici's
   \`dispatch\` by a handler of its own, \`SseReading\` (src/providers/sse-reading.ts), as JSON replies have been since
   item 18: each network read parsed and translated as it arrives into the iterator's queue, with the same outcomes
   (unit tests against a real server for each: non-2xx with the upstream's message, STREAM_TRUNCATED, a fault after
   the chunks before it, the drain after the end marker and the socket kept, the socket dropped on an early stop or
   a cancel, back-pressure past 64 queued chunks, STREAM_IDLE). After it, undici's share of the stream's extra was
   7.7 µs. In A/B runs against the build before (streaming c=20, 12 rounds each): 121.7 and 116.5 % of the req/s
   (medians; per-round 97.7 to 156.4 % and 103.9 to 184.9 %). The SSE parser then found its line ends with
   \`indexOf\` instead of a loop over every character: 1.7 µs against 4.9 to 6.7 µs for the benchmark's 1,139-byte
   stream (both builds in one process, alternated). Tried and dropped: one socket write per turn of the event loop
   for a stream's events (the socket corked until the next tick, or the text gathered and written then): the
   benchmark's whole stream arrives in one read and Node already sends it in one writev (strace: 2.0 writev and 2.1
   reads per streamed response, the upstream's included), and switching it on and off in one gateway process
   (SIGUSR2 between cells, 12 rounds) moved the main thread's CPU by 1.2 %; the chunk's frame with the provider's
   JSON cached: 0.43 against 0.55 µs a chunk. How these were judged: two gateway processes of the same build
   differed by 14 % in CPU per request (an A/A run), so changes of a few per cent were measured within one process
   (toggled, or plain against streaming bodies) or in micro-benchmarks, and the whole by A/B rounds.
20. **Session 20: the gap to the logged proxy, read with perf.** Main-thread CPU per request from /proc (one step
   at c=20, 3 s cells of each taken in turns, 6 to 10 rounds, three runs): the gateway 311 to 362 µs, the logged
   proxy 258 to 318 µs, 45 to 66 µs more (15 to 24 %), at 83 to 94 % of its req/s. \`perf record\` of both main
   threads (cpu-clock at 1,999 Hz, JIT frames named by \`--perf-basic-prof\`, 5 s of each under the same load) counted
   351 against 318 µs a request and found no single place for the difference. The largest were V8's scavenger
   (+4 µs: more of the gateway's young objects are alive at a collection and copied) and the kernel's task switch
   (+3); then the gateway's own functions at 0.4 to 2.1 µs each (the failover core's \`execute\` 2.1, the response
   headers 1.2, the upstream body's building 1.1, the fast path's handler 1.0, the validation pipe 0.7, the input
   scan 0.7, the key's admission 0.7 …). The JSON parse and stringify, the socket writes, undici and pino cost both
   about the same. Tried and not kept: a 16 MB semi-space against the 8 MB \`npm start\` uses (fewer scavenges):
   3.5 % less CPU per request, where an A/A run of two processes with the same flags differed by 8 %; pino-http's
   request line against the same line written by pino directly: 8.8 to 11.5 against 8.3 to 9.9 µs in a
   micro-benchmark, too little to trade the kept library for code of our own. What the gateway does beyond the
   logged proxy is the work that reference leaves out (validation, metrics, rate limit, breaker, failover core,
   the fast path's routing), a microsecond or two each.
21. **Session 21: the first byte at c=1, timed inside both processes.** A preload (not kept) stamped, per streamed
   request at c=1, the \`request\` event, the upstream dispatch, the upstream's first bytes, the first client write,
   the \`end\` and the next request, in the gateway and the logged stream proxy measured in turns (4 to 6 rounds of
   3 s in each of six runs; the host's spells moved the first byte from 0.8 to 2.3 ms between runs). In the three
   faster runs the upstream's wait (341 to 368 against 347 to 370 µs, medians) and the relay from its first bytes to
   the client write (52 to 56 against 53 to 56 µs) were the same; the work before the upstream call was not: 97 to
   108 against 66 to 73 µs from arrival to dispatch, the gap the first byte showed (0.03 to 0.12 ms). Marks inside
   the gateway in one slow run (µs from arrival, medians): the fast path's routing check 12, the request id 9, the
   key's admission 18, the body's end 69 (47 and 54 in two faster runs, where the logged proxy's came at 32), the
   request line 25, the global pipes 29, the failover core and the adapter up to the dispatch 23. At c=1 each piece
   runs cold and costs several times its share at c=20 (item 20: a microsecond or two each); none is large enough
   that moving it would close the gap alone, and all but the routing check are required before the upstream call.
   After the answer's \`end\` the gateway worked on for 93 µs (the logged proxy 58; one run) before its event loop
   was free.
22. **Session 22: one request a turn measured every request cold.** Measured alone, one after the other (10 s
   each at c=1, streaming), the gateway's and the logged stream proxy's p50 to the first event were 0.621 and 0.609
   ms, their main threads' CPU 552 and 546 µs a request. Taken in turns with one request a turn, the gateway was
   0.09 to 0.16 ms behind the logged stream proxy in every run, whatever its place in the turn (three orders, two
   runs each: 0.16, 0.11, 0.10, 0.12, 0.10, 0.09 ms), so following its own request at the edge of a turn was not
   the cause. With each target's requests in runs (bare stream proxy, logged stream proxy, gateway; 12 s each way,
   three runs; over the bare stream proxy, then over the logged stream proxy): one a turn 0.434 / 0.227 / 0.195 and
   0.158 / 0.117 / 0.097 ms; two in a row, the first not kept, 0.166 / 0.185 / 0.164 and 0.016 / 0.028 / 0.067;
   twenty in a row, the first five not kept, 0.134 / 0.116 / 0.142 and 0.045 / 0.039 / 0.030. Every target's p50
   fell in runs (the bare stream proxy's from 0.69 to 1.27 ms to 0.52 to 0.56): a request that follows other
   processes' requests finds the caches and branch predictors as they left them, and the gateway, the process that
   touches the most code and heap per request, pays the most for it. A c=1 client of a gateway sends it one request
   after another, so the paired figures are now taken in runs of 20, the first 5 not kept (turns of a few tens of
   ms, still fine enough for the host's spells), with one request a turn shown beside them. Measured and left
   alone: \`strace -c\` of the main threads at c=1, streaming: 7.76 against 7.75 syscalls a request (the gateway
   writes a whole stream in one writev where the logged proxy writes its end apart); the request line's logger made
   after the upstream dispatch instead of before, in \`bench:chat-ab\`'s paired lines against the build before
   (one request a turn, 20 s): one step +0.019 ms, first event -0.004 ms, inside the blocks' spread (-0.030 to
   +0.038), so not kept; at c=20 a 32 MB semi-space cut the scavenges' time to a third (33 to 47 against 103 to 121
   ms in 4 s) and \`--single-threaded-gc\` changed nothing, and neither moved the p99 beyond the cells' own spread
   (medians of 4 rounds 19.15 ms with the start flags, 21.08 and 20.35 with those, req/s from 2,072 to 3,515 across
   the cells); the idle gateway's main thread uses 3 to 4 % of a core, mostly the once-a-second re-reads of shared
   state (keys, circuits, counts: \`SVC_SYNC_INTERVAL_MS\`) through TypeORM, and wakes every 10 ms for prom-client's
   event-loop-lag timer.

Still open, and why: a failover request makes two upstream calls, each a socket write and read that the
kernel charges to this process, plus its event's INSERT, so on this machine it costs about 1.7 times a
one-step request however lean the JavaScript; 80 % of one step is out of reach without not calling the
failing primary (which is what the breaker does after 5 failures: the circuit-open mode). The *logged
failover* reference shows it: the logged proxy doing only what such a request must (the failing call with
its error body read and a warning logged, the second call, the event stored before the answer as
decisions §8 asks, the alert header) reaches about 60 % of the logged proxy (the Targets table above has
this run's figure), so 80 % is below the floor of the required work, whatever the gateway's own code costs. For one step,
the *logged proxy* reference row shows where the floor is: the bare proxy plus only the work every
request of this gateway needs (its request line, the key's hash, the body parsed and the model replaced,
the answer parsed and \`provider\` added, the x-svc-* headers, a timer per upstream call, a usage record batched
to PostgreSQL) and nothing else (no framework, validation, metrics, rate limit or failover core). Since item 15
it does each of these the way the gateway does, and it reaches well over half of the chunked bare proxy (the
Targets table above has this run's figures): the one-step target is not below the floor. Earlier notes said
that about 45 % was the limit of any gateway that logs, authenticates and records each request; that figure came
from a reference doing two pieces of that work more expensively than needed, and it was wrong. Against 50 % the
gateway lands on either side from run to run (41.8 to 47.2 % in the full runs of sessions 13 to 15, 50.7 % in
session 16's, whose per-round ratios went from 38.1 to 68.5 %, 42.3 % in session 17's, where the chunked bare proxy
ran at 13,674 req/s against 6,427 in session 16's and the logged proxy reached 51.2 %); what separates it from the
logged proxy is its own work beyond that reference (items 15 to 17; 82.4 % of the logged proxy in session 17's run),
spread thin: no single item above 3 % of a request in the profile, where the two socket writes of a request are
about 45 % of the gateway's busy time. The p99 at c=20 moves with the host the same way: the logged proxy's own
p99 is in the Results table; in session 16's run it was 13.11 ms, above the 12 ms target, where the gateway's was
12.54 ms, and in session 17's the gateway's was 6.95 ms. On this VM the same code moved by up to 2x between runs an hour
apart (upstream direct at c=20 from about 9,500 to 18,700 req/s), and the ratios that wait on a commit
(failover, circuit open: the event is stored before the response) moved the most; the ratio targets are
therefore taken from interleaved rounds (above). The added p50 at c=1 has its floor beside it in the Targets table:
the bare proxy's and the logged proxy's own added p50, measured in the same turns (and in the same rounds). At c=1
each hop is a wake-up of another process on a 2-core machine, so a proxy that does nothing already adds most of the
0.3 ms; what the gateway adds beyond the logged proxy is the figure its own code answers for. Taken in turns, every
request of a target follows requests to the other targets, probably why the paired added p50s sit above the
rounds' (each request meets caches the others have filled, and a larger process pays more for that; session 17: the gateway 0.32 against
0.27 ms, the logged proxy 0.30 against 0.24, the bare proxy 0.20 against 0.18). The judged figure is the paired
one all the same: it was chosen before the run for its spread (a few hundredths of a ms over its blocks), and is
not swapped for the rounds' now that the rounds' would pass. Session 18's three full runs fell on noisy spells of the host
(the first two with a 16 MB semi-space, see item 18; this section's is the third). One step reached 56.8, 57.0 and
55.6 % of the chunked bare proxy (logged proxy 64.0, 63.0 and 78.6 %). The added p50 at c=1, in turns: 0.49, 0.48 and
0.48 ms, where the bare proxy's own was 0.38, 0.38 and 0.37 ms and the logged proxy's 0.51, 0.52 and 0.49 in the same
turns (session 17: 0.20 and 0.30), so on those spells the 0.3 ms target was below what a proxy that does nothing
added, and the gateway added no more than the reference doing only the required work. The first byte: 0.26, 0.32 and
0.24 ms over the bare stream proxy (session 17: 0.13). The p99 at c=20: 14.60, 10.88 and 12.42 ms in the 10 s cells.
Streaming: 58.8, 49.4 and 59.0 % of the bare stream proxy.
Session 19's runs: at its start (no change yet, no baseline), on a host where the bare proxies ran faster against
everything else, streaming fell to 42.8 % of the bare stream proxy (the gateway 70.2 % of the logged stream proxy),
one step to 47.8 % of the chunked bare proxy (logged proxy 53.2 %), the first byte was +0.21 ms and the added p50 0.39
ms (bare proxy 0.25, logged proxy 0.38); after item 19 (this section's run, baseline the session's start): streaming
54.2 % (the gateway 86.4 % of the logged stream proxy; 115.6 % of the baseline's req/s), first byte +0.21 ms where
the logged stream proxy's own was +0.19 in the same turns, one step 45.1 % of the chunked bare proxy (98.7 % of the
logged proxy, which reached 51.7 %; 114.6 % of the baseline), added p50 0.42 ms where the logged proxy's own was 0.41
and the bare proxy's 0.26, p99 9.07 ms.
Session 20's two runs (item 20; no change to the request path, no baseline) fell on a much slower spell of the
host: the bare proxy answered 5,183 and 5,354 req/s at c=20 (12,378 in session 19's run) and the upstream direct's
p50 at c=1 was 0.24 and 0.26 ms (0.04). In the first, one step reached 57.2 % of the chunked bare proxy (the logged
proxy 67.6 %), streaming 65.3 % of the bare stream proxy, circuit open 95.2 % (c=20) and 109.8 % (c=1, paired),
failover 64.1 and 55.5 %; the first byte was +0.24 ms (the logged stream proxy's own +0.17), the added p50 0.60 ms
(the bare proxy's 0.42, the logged proxy's 0.60) and the p99 at c=20 17.16 ms, where the logged proxy's own was
12.40 ms and the chunked bare proxy's 11.78 ms. The second (with the logged and the chunked bare proxy's
p99 now beside the target): one step 59.1 % (logged proxy 68.7 %), streaming 65.7 %, circuit open 98.0 and
106.4 %, failover 64.3 and 64.2 %; first byte +0.23 ms (logged stream proxy +0.14), added p50 0.55 ms (bare proxy
0.40, logged proxy 0.53), p99 14.55 ms (logged proxy 14.33, chunked bare proxy 8.06). On that spell the 12 ms p99 and
the 0.3 ms added p50 were below what the logged proxy, doing only the required work, reached itself.
Sessions 22 to 25, six judged runs (the request path unchanged from session 22's to the fourth; in the fifth and the
sixth, this section's, the chat fast path attaches the request line before the key: two \`bench:chat-ab\` runs against
the build before put it at 101.3 and 99.1 % of its req/s at c=20, and its p50 at c=1 -0.006 and +0.004 ms from it):
the issue's ten lines passed 7, 8, 9, 10, 9 and 10 of 10, the chunked bare proxy at 3,773, 10,871, 11,461, 22,109,
20,322 and 20,528 req/s at c=20. One step against it: 54.3, 48.1, 48.3, 51.9, 52.1 and 52.8 % (the logged proxy 66.1,
56.8, 58.1, 61.1, 62.7 and 62.7 %; the gateway 82 to 91 % of the logged proxy in every run). Added p50 at c=1: 0.48,
0.35, 0.30, 0.17, 0.16 and 0.17 ms (the logged proxy's own 0.45, 0.30, 0.25, 0.13, 0.13 and 0.13). p99 at c=20:
16.53, 8.86, 8.03, 5.38, 5.62 and 5.18 ms (the logged proxy's own 13.80, 6.69, 8.88, 4.57, 4.46 and 4.57). First byte:
+0.24, +0.14, +0.12, +0.07, +0.07 and +0.08 ms. Circuit open at c=20: 99.0, 99.5, 95.9, 97.8, 94.9 and 96.6 %, the
fifth 0.1 point under its target with its rounds from 88.8 to 106.2 % (the sixth's from 83.9 to 108.7 %): past an
open circuit a request still gets the alert header the contract asks of every failover, is counted in the failover
metric and the coalescing window, and has the skipped step in its usage row's attempts (item 14: about 2 % of its CPU
then, when a one-step request took 160 µs of the main thread; a larger share on a spell where it takes 70, item 23), so its median sits a few points
under 100 % and a run's rounds spread over more than the rest. The one-step and circuit-open lines are the two that
sit near their targets: their 12 rounds spread over about ten to eighteen points, and their medians fell on either
side of the target from run to run.

23. **Session 25: the gap to the logged proxy once more, on a fast spell.** Both processes profiled side by side
   (\`--cpu-prof\`, 6 alternating 3 s cells of each at c=20, only the samples inside the measured cells kept): 55.1 µs of
   the logged proxy's main thread a request against 70.1 for the gateway's, at 13,900 against 11,400 req/s. The
   difference, largest first (µs a request): the socket's \`writev\` +3.3 (\`strace -c -f\` of both under the same load
   counted 2.0 \`writev\` and 2.1 reads a request in each, so it is not one write more), garbage collection +1.8, the
   adapter's request body +1.8 and the reply's parse +1.5 (the logged proxy's own parse and stringify are inside its
   \`relay\`, 23.7 in all), the body's read and parse (raw-body and json-body) 2.6, then the proxied call, the chat
   service, the failover core, the chat request's checks, the attempt, the input scan, the fast path, prom-client and
   the usage row at 0.2 to 1.2 each. Nothing is large enough alone to move the ratio by the two or three points it
   spreads over. Tried and not kept: a 16 MB semi-space (as in item 18) alternated with the 8 MB of \`npm start\` in
   10 rounds of 3 s against the same chunked bare proxy: 99.0 % of the req/s.
`;

/** What `--profile=stream` showed for streaming chat (issue 16, part 3), and what was done. */
export const STREAM_PROFILE_NOTE = `### Streaming profile

\`npm run bench:chat -- --profile=stream\` (the one-step gateway answering \`stream: true\` at c=20, 8 s, on a
busy 2-core machine: 1,140 req/s under the profiler), the top three costs of the busy main thread, and what was done:

1. **The client writes (about a third).** The response head went out in a write of its own
   (\`res.flushHeaders()\`: \`writeUtf8String\`, 13 to 15 %), before the first event's \`writev\`; then one
   \`writev\` per upstream read and one for \`[DONE]\` (18 %). Now the head goes out with the first event, as the
   bare streaming proxy sends it (src/chat/chat.service.ts: \`res.flushHeaders()\` only for a stream with no
   first chunk). Counted with \`strace -c\` at c=20 afterwards: 2.2 write calls and 2.2 reads per streamed
   answer, against the bare streaming proxy's 3.0 and 2.0, so the socket work is no longer where it loses.
2. **undici's upstream read (about 20 %) and what the gateway wrapped around it (about 9 %).** Every network read went
   through three async-generator layers (body iterator, \`sseEvents\`, \`relaySse\`) with a promise per line, and
   every stream's drain after \`[DONE]\` made an \`AbortSignal.timeout\`. Now: a synchronous \`SseParser\`
   (src/providers/sse.ts, decoding with a StringDecoder: a TextDecoder cost about 1 µs more per stream) and one
   relay loop per body (src/providers/http.ts \`relaySse\`), the drain bounded by a plain timer; a chunk whose
   write did not have to wait is not awaited (src/failover/proxied-call.ts). A hand-written iterator in place
   of the relay's async generator (one promise a chunk instead of three) measured 100.5 % of the generator in
   12 interleaved rounds and was not kept.
3. **Garbage collection (about 8 %) and each chunk's JSON round trip (about 4 %).** Each event was parsed, copied
   with \`provider\` and serialised again. The OpenAI adapter now keeps the event's text on the chunk
   (\`withRawJson\`) and \`sseChunkFrame(chunk, provider)\` (src/common/http/sse-frame.ts) appends the provider to
   that text. Each event is still parsed once: that is how a mid-stream \`error\` event, the usage and a
   malformed event are seen (the bare proxy passes bytes it never reads).

Corking the answer for the events of one upstream read (one write for them and the end marker) measured
97.7 % of not corking in 10 interleaved rounds and was not kept.

Session 19, point 2 again: undici's \`request\` itself (its headers object, the Readable body, its async iterator and
end-of-stream wiring) was still about 24 µs of a streamed request's extra over a plain one. A chat stream is now read
through undici's \`dispatch\` by \`SseReading\` (src/providers/sse-reading.ts), which parses and translates each read
as it arrives into the iterator's queue; undici's share of the extra fell to about 8 µs (item 19 of the one-step
profile notes, with the A/B figures). Session 21: MiniMax's speech stream reads through \`SseReading\` too, and
\`relaySse\` is gone. MiniMax answers its errors to a stream request as one JSON body, so \`SseReading\` now reads a
2xx JSON answer whole, up to a cap, as one event (\`wholeJsonCap\`); nothing in this chat benchmark's path changed.
`;
