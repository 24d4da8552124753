import { ValidateBy, ValidationOptions } from 'class-validator';

/** A JSON object whose values are all non-empty strings (e.g. a voice map). */
export const IsStringRecord = (options?: ValidationOptions): PropertyDecorator =>
  ValidateBy(
    {
      name: 'isStringRecord',
      validator: {
        validate: (value: unknown) =>
          typeof value === 'object' &&
          value !== null &&
          !Array.isArray(value) &&
          Object.values(value).every((v) => typeof v === 'string' && v.length > 0),
        defaultMessage: () => '$property must be an object of non-empty strings',
      },
    },
    options,
  );
