import { Injectable, PipeTransform } from '@nestjs/common';
import { createValidationPipe } from '../common/http/validation';
import {
  flattenVoice,
  fromOpenAi,
  isOpenAiShape,
  OpenAiSpeechRequestDto,
  SpeechBody,
} from './dto/openai-speech-request.dto';
import { SpeechRequestDto } from './dto/speech-request.dto';

/**
 * The body of synchronous speech in either shape: OpenAI's (so the official SDK works unchanged) or MiniMax's,
 * each validated as strictly as a DTO (the route's parameter type is an interface, so the global pipe leaves it to this one).
 */
@Injectable()
export class SpeechBodyPipe implements PipeTransform<unknown, Promise<SpeechBody>> {
  private readonly validation = createValidationPipe();

  async transform(value: unknown): Promise<SpeechBody> {
    if (isOpenAiShape(value)) {
      const dto = (await this.validation.transform(flattenVoice(value), {
        type: 'body',
        metatype: OpenAiSpeechRequestDto,
      })) as OpenAiSpeechRequestDto;
      return fromOpenAi(dto);
    }
    return {
      request: (await this.validation.transform(value, {
        type: 'body',
        metatype: SpeechRequestDto,
      })) as SpeechRequestDto,
      shape: 'minimax',
    };
  }
}
