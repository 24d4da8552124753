import { DomainError } from '../../common/errors/domain-error';
import { MAX_INPUT_DEPTH } from '../../common/http/input-scan';
import { parseClientMessage } from './stream-messages';

const frame = (text: string): Buffer => Buffer.from(text, 'utf8');

/** The DomainError a frame is refused with (or the other error, which a test then shows). */
function refusal(text: string): unknown {
  try {
    parseClientMessage(frame(text), false);
  } catch (err) {
    return err instanceof DomainError ? err.toBody().error : err;
  }
  throw new Error('the frame was accepted');
}

const nestedArrays = (levels: number): string => `${'['.repeat(levels)}${']'.repeat(levels)}`;

describe('parseClientMessage', () => {
  it('accepts a task_continue', () => {
    expect(parseClientMessage(frame('{"event":"task_continue","text":"Hello."}'), false)).toMatchObject({
      event: 'task_continue',
      body: { text: 'Hello.' },
    });
  });

  it('refuses a frame nested thousands deep as invalid_value, naming the field, without overflowing the stack', () => {
    const deep = `{"event":"task_continue","text":"hi","x":${nestedArrays(20000)}}`;
    expect(refusal(deep)).toMatchObject({
      code: 'invalid_value',
      param: 'x',
      message: `'x' is nested deeper than ${MAX_INPUT_DEPTH} levels.`,
    });
    expect(
      refusal(`{"event":"task_start","model":"m","voice_setting":{"voice_id":${nestedArrays(20000)}}}`),
    ).toMatchObject({
      code: 'invalid_value',
      param: 'voice_setting',
    });
    expect(refusal(`{"event":"task_finish","x":${nestedArrays(20000)}}`)).toMatchObject({
      code: 'invalid_value',
      param: 'x',
    });
  });

  it('refuses text with a NUL and prototype names as keys, as HTTP bodies do', () => {
    expect(refusal('{"event":"task_continue","text":"a\\u0000b"}')).toMatchObject({
      code: 'invalid_value',
      param: 'text',
    });
    expect(
      refusal('{"event":"task_start","model":"m","voice_setting":{"voice_id":"en-us","__proto__":{"x":1}}}'),
    ).toMatchObject({
      code: 'unknown_field',
      param: 'voice_setting.__proto__',
    });
  });

  it('names the type a field of the wrong type must have, before its length or range rules', () => {
    expect(refusal('{"event":"task_continue","text":5}')).toMatchObject({
      code: 'invalid_value',
      param: 'text',
      message: expect.stringContaining('must be a string'),
    });
    expect(refusal('{"event":"task_start","model":5}')).toMatchObject({
      code: 'invalid_value',
      param: 'model',
      message: expect.stringContaining('must be a string'),
    });
  });

  it('accepts a 10,000-emoji task_continue sent JSON-escaped', () => {
    const escaped = `{"event":"task_continue","text":"${'\\ud83d\\ude00'.repeat(10_000)}"}`;
    expect(parseClientMessage(frame(escaped), false)).toMatchObject({
      event: 'task_continue',
      body: { text: '\u{1F600}'.repeat(10_000) },
    });
  });
});
