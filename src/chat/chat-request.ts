import { DomainError } from '../common/errors/domain-error';
import type { ChatMessage, ChatRequest } from '../providers/provider-adapter';

const invalid = (param: string, message: string): DomainError => new DomainError('invalid_value', message, { param });
const missing = (param: string): DomainError =>
  new DomainError('missing_field', `Missing required field '${param}'.`, { param });

function parseMessage(value: unknown, i: number): ChatMessage {
  const param = `messages[${i}]`;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid(param, `'${param}' must be an object.`);
  const message = value as Record<string, unknown>;
  if (message.role === undefined) throw missing(`${param}.role`);
  if (typeof message.role !== 'string' || message.role.length === 0)
    throw invalid(`${param}.role`, `'${param}.role' must be a string.`);
  const content = message.content;
  const toolCall = message.role === 'assistant' && Array.isArray(message.tool_calls);
  if (content === undefined && !toolCall) throw missing(`${param}.content`);
  if (content !== undefined && content !== null && typeof content !== 'string' && !Array.isArray(content)) {
    throw invalid(`${param}.content`, `'${param}.content' must be a string or an array of content parts.`);
  }
  return message as ChatMessage;
}

/** Checks what the gateway itself needs (model, messages, stream); every other field passes through. */
export function parseChatRequest(body: unknown): ChatRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new DomainError('invalid_value', 'The request body must be a JSON object.');
  }
  const request = body as Record<string, unknown>;
  if (request.model === undefined) throw missing('model');
  if (typeof request.model !== 'string' || request.model.length === 0)
    throw invalid('model', "'model' must be a non-empty string.");
  if (request.messages === undefined) throw missing('messages');
  if (!Array.isArray(request.messages) || request.messages.length === 0)
    throw invalid('messages', "'messages' must be a non-empty array.");
  if (request.stream !== undefined && typeof request.stream !== 'boolean')
    throw invalid('stream', "'stream' must be a boolean.");
  return { ...request, model: request.model, messages: request.messages.map(parseMessage), stream: request.stream };
}
