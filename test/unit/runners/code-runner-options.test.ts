import { describe, expect, it } from 'vitest';
import { CallerError } from '../../../src/spec/index.js';
import { codeRunner, DEFAULT_CODE_TIMEOUT_MS, DEFAULT_MAX_OUTPUT_BYTES } from '../../../src/runners/index.js';
import { compileCodeRunnerOptions } from '../../../src/runners/code-runner-options.js';

describe('codeRunner config', () => {
  it('defaults timeoutMs to 60 s and maxOutputBytes to 1 MiB', () => {
    expect(compileCodeRunnerOptions({ entrypoint: './src//main.js' })).toEqual({
      entrypoint: 'src/main.js',
      timeoutMs: DEFAULT_CODE_TIMEOUT_MS,
      maxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES,
      command: undefined,
    });
    expect(DEFAULT_CODE_TIMEOUT_MS).toBe(60_000);
    expect(DEFAULT_MAX_OUTPUT_BYTES).toBe(1_048_576);
  });

  it('accepts the bounds', () => {
    expect(compileCodeRunnerOptions({ entrypoint: 'a.py', timeoutMs: 86_400_000, maxOutputBytes: 1, command: ['python3', 'a.py'] })).toMatchObject({
      timeoutMs: 86_400_000,
      maxOutputBytes: 1,
      command: ['python3', 'a.py'],
    });
  });

  const bad: Array<[string, unknown, RegExp]> = [
    ['no config', undefined, /config must be an object/],
    ['an array config', ['main.js'], /config must be an object/],
    ['a missing entrypoint', {}, /config\.entrypoint must be .* relative path string.*got undefined/],
    ['a numeric entrypoint', { entrypoint: 7 }, /config\.entrypoint .*got 7 \(number\)/],
    ['an empty entrypoint', { entrypoint: '' }, /config\.entrypoint "" is empty/],
    ['an absolute entrypoint', { entrypoint: '/bin/sh' }, /config\.entrypoint "\/bin\/sh" is absolute/],
    ['an escaping entrypoint', { entrypoint: '../main.js' }, /config\.entrypoint "\.\.\/main\.js" leaves the artifact directory/],
    ['timeoutMs 0', { entrypoint: 'm.js', timeoutMs: 0 }, /config\.timeoutMs must be an integer number of milliseconds from 1 to 86400000, got 0 \(number\)/],
    ['a negative timeoutMs', { entrypoint: 'm.js', timeoutMs: -1 }, /config\.timeoutMs .*got -1/],
    ['a fractional timeoutMs', { entrypoint: 'm.js', timeoutMs: 1.5 }, /config\.timeoutMs .*got 1\.5/],
    ['a string timeoutMs', { entrypoint: 'm.js', timeoutMs: '100' }, /config\.timeoutMs .*got "100" \(string\)/],
    ['a timeoutMs past 24 h', { entrypoint: 'm.js', timeoutMs: 86_400_001 }, /config\.timeoutMs .*86400001/],
    ['maxOutputBytes 0', { entrypoint: 'm.js', maxOutputBytes: 0 }, /config\.maxOutputBytes must be an integer number of bytes/],
    ['an empty command', { entrypoint: 'm.js', command: [] }, /config\.command must be a non-empty array/],
    ['a command of numbers', { entrypoint: 'm.js', command: ['node', 1] }, /config\.command\[1\] must be a string/],
    ['a command string', { entrypoint: 'm.js', command: 'node m.js' }, /config\.command must be a non-empty array.*\["python3", "main\.py"\]/],
    ['a misspelled option', { entrypoint: 'm.js', timeoutms: 5 }, /config\.timeoutms is not an option; allowed options are entrypoint, timeoutMs, maxOutputBytes, command/],
  ];
  it.each(bad)('refuses %s with a CallerError naming the field', (_label, config, message) => {
    let thrown: unknown;
    try {
      codeRunner(config as never);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(CallerError);
    expect((thrown as Error).message).toMatch(/^codeRunner: /);
    expect((thrown as Error).message).toMatch(message);
  });
});
