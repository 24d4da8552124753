import { randomUUID } from 'node:crypto';

// Built outside TypeScript's emit so the compiler (tsc or ts-jest) cannot turn it into require().
// The source is unique per module instance: V8 reuses a compiled function of identical source together
// with the import() host of its first compilation, which under jest is an earlier, torn-down test file's.
// eslint-disable-next-line @typescript-eslint/no-implied-eval -- a constant string, not user input: keeps a real import()
const dynamicImport = new Function('specifier', `return import(specifier); // ${randomUUID()}`) as (
  specifier: string,
) => Promise<unknown>;

/** Loads an ESM-only package from this CommonJS build (jest runs with --experimental-vm-modules). */
export function loadEsm<T>(specifier: string): Promise<T> {
  return dynamicImport(specifier) as Promise<T>;
}
