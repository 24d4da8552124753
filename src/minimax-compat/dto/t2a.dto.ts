import { AsyncSpeechRequestDto, SpeechRequestDto } from '../../speech/dto/speech-request.dto';

/**
 * MiniMax's T2A v2 request (`POST /v1/t2a_v2`): the speech request with MiniMax's optional fields, which
 * this surface honours itself: `stream` answers MiniMax's SSE, `stream_options.exclude_aggregated_audio`
 * leaves the clip out of the final event, `output_format: "url"` answers a key-free 24 h link.
 */
export class T2aRequestDto extends SpeechRequestDto {}

/** MiniMax's async T2A request (`POST /v1/t2a_async_v2`): the async speech request. */
export class T2aAsyncRequestDto extends AsyncSpeechRequestDto {}

/**
 * The speech request inside a MiniMax one: this surface's own fields (how the answer is shaped) removed, the
 * rest as sent, for the speech services to read what they take (MiniMax's optional fields included).
 */
export function speechRequestOf(dto: T2aRequestDto): SpeechRequestDto {
  const { stream: _stream, stream_options: _options, output_format: _format, ...request } = dto;
  return request;
}
