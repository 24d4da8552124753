import type { ChatChunk } from '../providers/provider-adapter';
import { DeliveredText, readPast } from './continued-text';

const chunk = (delta: Record<string, unknown>, finish: string | null = null): ChatChunk => ({
  id: 'c',
  object: 'chat.completion.chunk',
  model: 'm',
  choices: [{ index: 0, delta, finish_reason: finish }],
});
const text = (content: string): ChatChunk => chunk({ content });

/** An upstream answer as an iterator that counts what was read of it. */
function answer(chunks: ChatChunk[]): AsyncIterator<ChatChunk> & { read: number } {
  const it = {
    read: 0,
    next: () =>
      Promise.resolve(
        it.read < chunks.length
          ? { done: false as const, value: chunks[it.read++] }
          : { done: true as const, value: undefined },
      ),
  };
  return it;
}

describe('the text a chat stream delivered', () => {
  it('joins the content of every chunk', () => {
    const delivered = new DeliveredText();
    for (const c of [chunk({ role: 'assistant', content: '' }), text('The '), text('quick '), chunk({}, 'stop')])
      delivered.see(c);
    expect(delivered.text).toBe('The quick ');
    expect(delivered.textOnly).toBe(true);
  });

  it('is not text only once a chunk carried a tool call or another choice', () => {
    const tools = new DeliveredText();
    tools.see(chunk({ tool_calls: [{ index: 0, function: { arguments: '{' } }] }));
    const choices = new DeliveredText();
    choices.see({ choices: [{ index: 1, delta: { content: 'x' } }] });
    expect([tools.textOnly, choices.textOnly]).toEqual([false, false]);
  });
});

describe('reading a continuing answer past the delivered text', () => {
  it('swallows a restart that repeats the delivered text and starts inside the chunk that goes past it', async () => {
    const first = await readPast(answer([chunk({ role: 'assistant', content: 'The qu' }), text('ick brown')]), {
      text: 'The quick ',
      strict: true,
    });
    expect(first).toEqual({ done: false, value: { ...text('brown') } });
  });

  it('abandons a restart at its first differing character, reading no further', async () => {
    const upstream = answer([text('The '), text('quick '), text('red '), text('fox')]);
    const first = await readPast(upstream, { text: 'The quick brown ', strict: true });
    expect(first).toBe('its answer differs from the delivered text at character 10');
    expect(upstream.read).toBe(3);
  });

  it('abandons a restart that finishes or ends before repeating all of it', async () => {
    expect(await readPast(answer([text('The '), chunk({}, 'stop')]), { text: 'The quick', strict: true })).toMatch(
      /ended after repeating 4 of the 9/,
    );
    expect(await readPast(answer([text('The ')]), { text: 'The quick', strict: true })).toMatch(/ended/);
  });

  it('swallows the white space a prefill left out as far as the answer repeats it, and keeps what differs', async () => {
    const repeated = await readPast(answer([chunk({ role: 'assistant', content: '' }), text(' '), text('fox')]), {
      text: ' ',
      strict: false,
    });
    expect(repeated).toEqual({ done: false, value: text('fox') });
    expect(await readPast(answer([text('fox')]), { text: ' ', strict: false })).toEqual({
      done: false,
      value: text('fox'),
    });
  });

  it('hands out a finish or usage chunk that comes right after the delivered text', async () => {
    const finish = chunk({}, 'stop');
    expect(await readPast(answer([text('Hi'), finish]), { text: 'Hi', strict: true })).toEqual({
      done: false,
      value: finish,
    });
  });

  it('refuses an answer with tool calls or several choices', async () => {
    const tools = answer([chunk({ tool_calls: [{ index: 0 }] })]);
    expect(await readPast(tools, { text: '', strict: true })).toBe('it answered with tool calls');
    const two = answer([
      {
        choices: [
          { index: 0, delta: {} },
          { index: 1, delta: {} },
        ],
      },
    ]);
    expect(await readPast(two, { text: '', strict: true })).toBe('it answered with several choices');
  });
});
