import { ApiProperty } from '@nestjs/swagger';

export class StreamTicketDto {
  @ApiProperty({ type: 'string', enum: ['speech.stream.ticket'] })
  object!: 'speech.stream.ticket';
  /** Use once, as `?ticket=` on the WebSocket upgrade of `/v1/audio/speech/stream` (or `/ws/v1/t2a_v2`). */
  @ApiProperty({ example: 'wst_3kTMd9Qx2LbN7vYcR5pW8hJf0aZsE1uG' })
  ticket!: string;
  /** Unix time in seconds after which the ticket is refused (60 s after it was issued). */
  @ApiProperty({ type: 'integer' })
  expires_at!: number;
}
