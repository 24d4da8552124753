import { StreamClient, type StreamMessage } from './ws-client';

/** What one `task_continue` got back: its audio messages, the last being the `is_final` one. */
export interface Utterance {
  text: string;
  messages: StreamMessage[];
  audio: Buffer;
}

export interface MiniMaxSession {
  client: StreamClient;
  utterances: Utterance[];
  started: StreamMessage;
}

/**
 * A client written the way published MiniMax WebSocket clients are: after `task_start` it waits for
 * `task_started`; after each `task_continue` it reads messages until one has `is_final: true` (giving up
 * after `budgetMs`), and only then sends the next text, or `task_finish`.
 */
export async function speakLikeMiniMaxClient(
  url: string,
  headers: Record<string, string>,
  taskStart: object,
  texts: string[],
  budgetMs = 2000,
): Promise<MiniMaxSession> {
  const client = await StreamClient.connect(url, headers);
  await client.waitFor((m) => m.event === 'connected_success', budgetMs);
  client.send(taskStart);
  const started = await client.waitFor((m) => m.event === 'task_started' || m.event === 'task_failed', 20000);
  if (started.event !== 'task_started') throw new Error(`task_start failed: ${JSON.stringify(started)}`);
  const utterances: Utterance[] = [];
  for (const text of texts) {
    const from = client.messages.length;
    client.send({ event: 'task_continue', text });
    const since = (m: StreamMessage): boolean => client.messages.indexOf(m) >= from;
    try {
      await client.waitFor((m) => since(m) && m.event === 'task_continued' && m.is_final === true, budgetMs);
    } catch (err) {
      throw new Error(
        `no is_final within ${budgetMs} ms after task_continue ${JSON.stringify(text)}: ${(err as Error).message}`,
      );
    }
    const messages = client.messages.slice(from).filter((m) => m.event === 'task_continued');
    const audio = Buffer.concat(messages.map((m) => Buffer.from((m.data as { audio: string }).audio, 'hex')));
    utterances.push({ text, messages, audio });
  }
  client.send({ event: 'task_finish' });
  await client.waitFor((m) => m.event === 'task_finished', budgetMs);
  await client.closed;
  return { client, utterances, started };
}
