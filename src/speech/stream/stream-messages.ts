import { plainToInstance, Type } from 'class-transformer';
import {
  IsDefined,
  IsOptional,
  IsString,
  MaxLength,
  MinLength,
  ValidateIf,
  ValidateNested,
  validateSync,
} from 'class-validator';
import { DomainError } from '../../common/errors/domain-error';
import { inputProblem } from '../../common/http/input-scan';
import { validationErrorToDomain } from '../../common/http/validation';
import { AudioSettingDto, MiniMaxOptionsDto, VoiceSettingDto, voiceSettingRequired } from '../dto/speech-request.dto';
import { assertTextLimit, SYNC_TEXT_LIMIT } from '../speech-job';

/** MiniMax's `task_start`, with MiniMax's optional fields (decisions §7) validated as on the HTTP routes. */
export class TaskStartMessage extends MiniMaxOptionsDto {
  @IsString()
  event!: 'task_start';

  @IsString()
  @MinLength(1)
  @MaxLength(200)
  model!: string;

  // ValidateNested alone lets an absent object through; absent only when timbre_weights names the voices
  @ValidateIf(voiceSettingRequired)
  @IsDefined()
  @ValidateNested()
  @Type(() => VoiceSettingDto)
  voice_setting?: VoiceSettingDto;

  @IsOptional()
  @ValidateNested()
  @Type(() => AudioSettingDto)
  audio_setting?: AudioSettingDto;
}

export class TaskContinueMessage {
  @IsString()
  event!: 'task_continue';

  // the limit is checked by parseClientMessage in characters (code points), as for sync speech
  @IsString()
  @MinLength(1)
  text!: string;
}

export type ClientMessage =
  | { event: 'task_start'; body: TaskStartMessage }
  | { event: 'task_continue'; body: TaskContinueMessage }
  | { event: 'task_finish' };

const invalid = (message: string, param: string | null = null): DomainError =>
  new DomainError('invalid_value', message, { param });

function validated<T extends object>(cls: new () => T, plain: object): T {
  const instance = plainToInstance(cls, plain);
  const errors = validateSync(instance, { whitelist: true, forbidNonWhitelisted: true });
  if (errors.length > 0) throw validationErrorToDomain(errors);
  return instance;
}

/** Parses one client frame of MiniMax's event protocol; anything else is a DomainError (→ task_failed, 1008). */
export function parseClientMessage(data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): ClientMessage {
  if (isBinary) throw invalid('Binary frames are not accepted: send JSON text messages.');
  let parsed: unknown;
  try {
    parsed = JSON.parse(
      Buffer.isBuffer(data)
        ? data.toString('utf8')
        : Buffer.concat(Array.isArray(data) ? data : [Buffer.from(data)]).toString('utf8'),
    );
  } catch {
    throw new DomainError('invalid_json', 'The message is not valid JSON.');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw invalid('A message must be a JSON object with an `event`.', 'event');
  // as for HTTP bodies: class-transformer recurses, so a frame nested thousands deep would overflow the stack
  const problem = inputProblem(parsed, '', true);
  if (problem) throw problem;
  const event = (parsed as { event?: unknown }).event;
  switch (event) {
    case 'task_start':
      return { event, body: validated(TaskStartMessage, parsed) };
    case 'task_continue': {
      const body = validated(TaskContinueMessage, parsed);
      assertTextLimit(body.text, SYNC_TEXT_LIMIT, 'text');
      return { event, body };
    }
    case 'task_finish':
      return { event };
    default:
      throw invalid(
        `Unknown event ${JSON.stringify(event)}: expected task_start, task_continue or task_finish.`,
        'event',
      );
  }
}
