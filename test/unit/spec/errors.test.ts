// brandedKind classifies by what an error is (the brand on its prototype chain), so
// subclasses count like their parents and a plain object is never mistaken for an error.
import { describe, expect, it } from 'vitest';
import { CallerError, ERROR_KIND, InfrastructureError, ModelError, brandedKind } from '../../../src/spec/index.js';

class MyInfra extends InfrastructureError {}
class SpawnFailed extends MyInfra {}
class MyCaller extends CallerError {}
class NonZeroExit extends ModelError {
  constructor(code: number) {
    super('NonZeroExit', `exited with code ${code}`);
  }
}

describe('brandedKind', () => {
  it('classifies the three error classes', () => {
    expect(brandedKind(new InfrastructureError('redis down'))).toBe('infrastructure');
    expect(brandedKind(new CallerError('bad config'))).toBe('caller');
    expect(brandedKind(new ModelError('RunTimeout', 'too slow'))).toBe('model');
  });

  it('classifies subclasses, at any depth, like their parents', () => {
    expect(brandedKind(new MyInfra('x'))).toBe('infrastructure');
    expect(brandedKind(new SpawnFailed('x'))).toBe('infrastructure');
    expect(brandedKind(new MyCaller('x'))).toBe('caller');
    expect(brandedKind(new NonZeroExit(2))).toBe('model');
  });

  it('names each instance after its own class and keeps a ModelError type', () => {
    const error = new NonZeroExit(3);
    expect(error.name).toBe('NonZeroExit');
    expect(error.type).toBe('NonZeroExit');
    expect(error.message).toBe('exited with code 3');
    expect(new SpawnFailed('x').name).toBe('SpawnFailed');
    expect(new ModelError('UnparsableOutput', 'no number').type).toBe('UnparsableOutput');
  });

  it('keeps the cause', () => {
    const cause = new Error('ENOMEM');
    expect(new MyInfra('spawn failed', { cause }).cause).toBe(cause);
  });

  it('returns undefined for anything unbranded', () => {
    for (const value of [new Error('x'), new TypeError('x'), {}, { kind: 'caller' }, { name: 'InfrastructureError' }, null, undefined, 'caller', 42, Object.create(null)]) {
      expect(brandedKind(value)).toBeUndefined();
    }
  });

  it('trusts only the known kinds under the shared brand (another copy of the package uses Symbol.for too)', () => {
    expect(ERROR_KIND).toBe(Symbol.for('rollout-queue.error-kind'));
    expect(brandedKind({ [Symbol.for('rollout-queue.error-kind')]: 'caller' })).toBe('caller');
    expect(brandedKind({ [ERROR_KIND]: 'fatal' })).toBeUndefined();
    expect(brandedKind({ [ERROR_KIND]: 1 })).toBeUndefined();
  });

  it('does not make the brand an enumerable or own field (it stays off the wire)', () => {
    const error = new MyInfra('x');
    expect(Object.getOwnPropertySymbols(error)).not.toContain(ERROR_KIND);
    expect(Object.keys(error)).not.toContain('kind');
  });
});
