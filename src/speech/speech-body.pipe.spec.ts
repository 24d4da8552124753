import { DomainError } from '../common/errors/domain-error';
import { SpeechBodyPipe } from './speech-body.pipe';

const pipe = new SpeechBodyPipe();

const refusal = async (body: unknown): Promise<DomainError> => {
  const err: unknown = await pipe.transform(body).then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(err)}`);
  return err;
};

describe('the synchronous speech body', () => {
  it("maps OpenAI's shape onto the MiniMax request: input, voice, speed, format at 24 kHz mono, instructions", async () => {
    const body = await pipe.transform({
      model: 'tts-1',
      input: 'Hello.',
      voice: 'alloy',
      response_format: 'pcm',
      speed: 1.5,
      instructions: 'Cheerful.',
    });
    expect(body).toEqual({
      request: {
        model: 'tts-1',
        text: 'Hello.',
        voice_setting: { voice_id: 'alloy', speed: 1.5 },
        audio_setting: { format: 'pcm', sample_rate: 24000, channel: 1 },
      },
      instructions: 'Cheerful.',
      shape: 'openai',
      streamFormat: 'audio',
    });
  });

  it("takes OpenAI's stream_format sse", async () => {
    expect(await pipe.transform({ model: 'm', input: 'Hi.', voice: 'alloy', stream_format: 'sse' })).toMatchObject({
      shape: 'openai',
      streamFormat: 'sse',
    });
  });

  it("takes OpenAI's custom voice object and defaults to mp3", async () => {
    const body = await pipe.transform({ model: 'm', input: 'Hi.', voice: { id: 'voice_abc' } });
    expect(body.request.voice_setting).toEqual({ voice_id: 'voice_abc' });
    expect(body.request.audio_setting?.format).toBe('mp3');
    expect(await refusal({ model: 'm', input: 'Hi.', voice: { id: 'voice_abc', other: 1 } })).toMatchObject({
      code: 'invalid_value',
      param: 'voice',
    });
  });

  it("refuses what OpenAI's shape may carry but the gateway cannot honour, naming the field", async () => {
    expect(await refusal({ model: 'm', input: 'Hi.', voice: 'alloy', speed: 4.5 })).toMatchObject({ param: 'speed' });
    expect(await refusal({ model: 'm', input: 'Hi.', voice: 'alloy', response_format: 'ogg' })).toMatchObject({
      param: 'response_format',
    });
    expect(await refusal({ model: 'm', input: 'Hi.', voice: 'alloy', stream_format: 'events' })).toMatchObject({
      param: 'stream_format',
    });
    expect(await refusal({ model: 'm', input: 'x'.repeat(10_001), voice: 'alloy' })).toMatchObject({
      code: 'text_too_long',
      param: 'input',
    });
    expect(await refusal({ model: 'm', voice: 'alloy' })).toMatchObject({ code: 'missing_field', param: 'input' });
  });

  it("keeps MiniMax's shape the default, validated as strictly as before", async () => {
    const request = { model: 'speech-02-hd', text: 'Hello.', voice_setting: { voice_id: 'en-us' } };
    expect((await pipe.transform(request)).request).toMatchObject(request);
    expect(await refusal({ ...request, input: 'mixed' })).toMatchObject({ code: 'unknown_field', param: 'input' });
    expect(await refusal({ model: 'speech-02-hd', voice_setting: { voice_id: 'en-us' } })).toMatchObject({
      code: 'missing_field',
      param: 'text',
    });
  });
});
