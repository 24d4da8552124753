import { ArgumentMetadata, ValidationError, ValidationPipe } from '@nestjs/common';
import { BODY_NOT_OBJECT, DomainError } from '../errors/domain-error';
import { arrayForObject, inputProblem } from './input-scan';

/** The first failing field of a class-validator result, as a path like `chain[0].model`, with its constraints. */
function firstFailure(
  errors: ValidationError[],
  prefix = '',
  inArray = false,
): { path: string; error: ValidationError } | null {
  for (const error of errors) {
    const path = inArray ? `${prefix}[${error.property}]` : prefix ? `${prefix}.${error.property}` : error.property;
    if (error.constraints && Object.keys(error.constraints).length > 0) return { path, error };
    const nested = firstFailure(error.children ?? [], path, Array.isArray(error.value));
    if (nested) return nested;
  }
  return null;
}

/**
 * The rules a field's message is chosen by, most telling first: what kind of value it must be, then
 * which values it may take. Any other rule (length, range, pattern, uniqueness, ...) comes after these,
 * in class-validator's order. A value of the wrong type usually breaks its range or length rules too
 * (`"speed": "fast"` is no number, and not at most 2 either): the message names the type.
 */
const RULE_PREFERENCE: readonly string[] = [
  'isDefined',
  'isArray',
  'isObject',
  'nestedValidation',
  'isString',
  'isNumber',
  'isInt',
  'isBoolean',
  'isDate',
  'isStringRecord',
  'isIn',
  'isEnum',
];

/** Single-value rules, and what they want, for the message when the field holds an array (or a query parameter given twice). */
const SINGLE_VALUE_RULES: Record<string, string> = {
  isString: 'string',
  isNumber: 'number',
  isInt: 'integer',
  isBoolean: 'boolean',
  isDate: 'date',
};

const rank = (rule: string): number => {
  const at = RULE_PREFERENCE.indexOf(rule);
  return at === -1 ? RULE_PREFERENCE.length : at;
};

/** The rule a field's message describes (see RULE_PREFERENCE), and that message. */
function preferredConstraint(constraints: Record<string, string>): { rule: string; message: string } | null {
  let best: string | null = null;
  for (const rule of Object.keys(constraints)) {
    if (best === null || rank(rule) < rank(best)) best = rule;
  }
  return best === null ? null : { rule: best, message: constraints[best] };
}

/** The reason a field is refused, in words for the client. */
function reasonFor(error: ValidationError, path: string, rule: string, message: string): string {
  const name = /^\d+$/.test(error.property) ? path : error.property;
  // class-validator's own words ("nested property x must be either object or array") would invite an array, which is refused
  if (rule === 'nestedValidation') return `${name} must be an object`;
  const single = SINGLE_VALUE_RULES[rule];
  if (single && Array.isArray(error.value)) return `${name} must be a single ${single}, not a list`;
  return message;
}

export function validationErrorToDomain(errors: ValidationError[]): DomainError {
  const failure = firstFailure(errors);
  if (!failure) return new DomainError('invalid_value', 'The request is invalid.');
  const { path, error } = failure;
  const constraints = error.constraints ?? {};
  if (constraints.whitelistValidation) {
    return new DomainError('unknown_field', `Unknown field '${path}'.`, { param: path });
  }
  if (error.value === undefined || error.value === null) {
    if (constraints.isDefined || !constraints.isOptional) {
      return new DomainError('missing_field', `Missing required field '${path}'.`, { param: path });
    }
  }
  const chosen = preferredConstraint(constraints);
  if (!chosen) return new DomainError('invalid_value', `Invalid value for '${path}'.`, { param: path });
  return new DomainError(
    'invalid_value',
    `Invalid value for '${path}': ${reasonFor(error, path, chosen.rule, chosen.message)}.`,
    { param: path },
  );
}

/** The ValidationPipe, plus what its rules cannot see (see input-scan.ts), checked on every param, query and body. */
class StrictValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'custom') return super.transform(value, metadata);
    const validated = this.toValidate(metadata);
    // a DTO body is one object: an array would be read as an object with the fields `0`, `1`, ... (an
    // invalid_value, as on the chat route; a JSON scalar never gets here: the parser refuses it as invalid_json)
    if (
      validated &&
      metadata.type === 'body' &&
      !metadata.data &&
      value !== undefined &&
      (typeof value !== 'object' || value === null || Array.isArray(value))
    ) {
      throw new DomainError('invalid_value', BODY_NOT_OBJECT);
    }
    const problem = inputProblem(value, metadata.data ?? '', validated);
    if (problem) throw problem;
    const result: unknown = await super.transform(value, metadata);
    const misplaced = validated ? arrayForObject(result) : null;
    if (misplaced) throw misplaced;
    return result;
  }
}

/**
 * Strict by default: unknown fields are refused, nothing is converted silently. Every rule of a field
 * is checked (no `stopAtFirstError`), so its message is chosen by RULE_PREFERENCE, not by the order
 * of its decorators; a valid request runs every rule either way.
 */
export const createValidationPipe = (): ValidationPipe =>
  new StrictValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    transformOptions: { enableImplicitConversion: false },
    validationError: { target: false, value: true },
    exceptionFactory: (errors) => validationErrorToDomain(errors),
  });
