import { expect } from 'vitest';
import { CallerError } from '../../src/spec/index.js';

/**
 * Calls `fn`, expects it to throw a {@link CallerError} (failing the test otherwise) and
 * returns that error, so the test can check its message.
 */
export function callerError(fn: () => unknown): CallerError {
  let thrown: unknown;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(CallerError);
  return thrown as CallerError;
}
