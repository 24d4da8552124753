import { ArgumentMetadata, ValidationError, ValidationPipe } from '@nestjs/common';
import { DomainError } from '../errors/domain-error';
import { arrayForObject, inputProblem } from './input-scan';

/** The first failing field of a class-validator result, as a path like `chain[0].model`, with its constraints. */
function firstFailure(errors: ValidationError[], prefix = '', inArray = false): { path: string; error: ValidationError } | null {
  for (const error of errors) {
    const path = inArray ? `${prefix}[${error.property}]` : prefix ? `${prefix}.${error.property}` : error.property;
    if (error.constraints && Object.keys(error.constraints).length > 0) return { path, error };
    const nested = firstFailure(error.children ?? [], path, Array.isArray(error.value));
    if (nested) return nested;
  }
  return null;
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
  const reason = Object.values(constraints)[0];
  return new DomainError('invalid_value', `Invalid value for '${path}': ${reason}.`, { param: path });
}

/** The ValidationPipe, plus what its rules cannot see (see input-scan.ts), checked on every param, query and body. */
class StrictValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'custom') return super.transform(value, metadata);
    const validated = this.toValidate(metadata);
    const problem = inputProblem(value, metadata.data ?? '', validated);
    if (problem) throw problem;
    const result: unknown = await super.transform(value, metadata);
    const misplaced = validated ? arrayForObject(result) : null;
    if (misplaced) throw misplaced;
    return result;
  }
}

/** Strict by default: unknown fields are refused, nothing is converted silently. */
export const createValidationPipe = (): ValidationPipe =>
  new StrictValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    transformOptions: { enableImplicitConversion: false },
    validationError: { target: false, value: true },
    stopAtFirstError: true,
    exceptionFactory: (errors) => validationErrorToDomain(errors),
  });
