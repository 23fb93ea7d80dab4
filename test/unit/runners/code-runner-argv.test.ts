import { describe, expect, it } from 'vitest';
import { CallerError } from '../../../src/spec/index.js';
import { codeRunner } from '../../../src/runners/index.js';
import { compileCodeRunnerOptions } from '../../../src/runners/code-runner-options.js';
import { fakeContext } from './fake-context.js';

// The evolution engine's form: `{"entrypoint": ["python3", "main.py"]}` (issue 12, item 5).
describe('codeRunner entrypoint as an argv array', () => {
  it('is the command; the file to write is the argument naming a relative path', () => {
    expect(compileCodeRunnerOptions({ entrypoint: ['python3', 'main.py'] })).toMatchObject({ entrypoint: 'main.py', command: ['python3', 'main.py'] });
    expect(compileCodeRunnerOptions({ entrypoint: ['python3', '-u', './src//solve.py', '--fast'] })).toMatchObject({ entrypoint: 'src/solve.py', command: ['python3', '-u', './src//solve.py', '--fast'] });
    expect(compileCodeRunnerOptions({ entrypoint: ['./run.sh'] })).toMatchObject({ entrypoint: 'run.sh', command: ['./run.sh'] });
  });

  it('is refused, naming the fix, when no argument names a file or command is given too', () => {
    expect(() => compileCodeRunnerOptions({ entrypoint: ['python3', '-c', 'print(1)'] })).toThrow(CallerError);
    expect(() => compileCodeRunnerOptions({ entrypoint: ['python3', '-c', 'print(1)'] })).toThrow(/names no file to write.*\["python3", "main\.py"\]/);
    expect(() => compileCodeRunnerOptions({ entrypoint: ['python3', '/abs/main.py'] })).toThrow(/names no file to write/);
    expect(() => compileCodeRunnerOptions({ entrypoint: ['python3', 'main.py'], command: ['python3', 'main.py'] })).toThrow(/give the command once/);
    expect(() => compileCodeRunnerOptions({ entrypoint: [] })).toThrow(/names no file to write/);
  });

  it('runs a Python artifact written from a string, the task on stdin', async () => {
    const run = codeRunner({ entrypoint: ['python3', 'main.py'], timeoutMs: 20_000 });
    const source = 'import json, sys\ntask = json.load(sys.stdin)\nprint(task["a"] + task["b"])\n';
    const output = await run(source, { id: 't', a: 2, b: 3 }, fakeContext());
    expect(output).toMatchObject({ exitCode: 0, stdout: '5\n' });
  });
});
