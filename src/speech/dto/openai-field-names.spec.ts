import { DomainError } from '../../common/errors/domain-error';
import { withOpenAiFieldNames } from './openai-speech-request.dto';

describe("errors of OpenAI-shaped speech requests name OpenAI's fields (decisions §10)", () => {
  it('renames the param and the field in the message, keeping code, status and headers', () => {
    const err = new DomainError(
      'voice_not_found',
      "The voice 'x' is not a voice of espeak; see voice_setting.voice_id.",
      { param: 'voice_setting.voice_id', headers: { 'x-a': '1' } },
    );
    const renamed = withOpenAiFieldNames(err) as DomainError;
    expect(renamed).toMatchObject({ code: 'voice_not_found', status: 400, param: 'voice', headers: { 'x-a': '1' } });
    expect(renamed.message).toBe("The voice 'x' is not a voice of espeak; see voice.");
  });

  it("renames a quoted 'text' but not the word text in a sentence", () => {
    const err = new DomainError('text_too_long', "'text' has 12 characters; the text limit is 10.", { param: 'text' });
    expect(withOpenAiFieldNames(err)).toMatchObject({
      param: 'input',
      message: "'input' has 12 characters; the text limit is 10.",
    });
  });

  it('leaves errors about other fields, and other errors, as they are', () => {
    const model = new DomainError('model_not_supported', 'No such model.', { param: 'model' });
    expect(withOpenAiFieldNames(model)).toBe(model);
    const plain = new Error('boom');
    expect(withOpenAiFieldNames(plain)).toBe(plain);
  });
});
