import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPythonChecks, startGatewayStack, stopGatewayStack, type GatewayStack } from '../../helpers/gateway-cli.js';
import { REPO_ROOT } from '../cli/cli-process.js';

// Fresh-user report, exact input, through the Python client and the gateway (which always stops a
// run on a caller Result): draft 2 of 6 with rendered.files "../evil.py" ended caller and stopped
// the run. A bad file inside rendered.files is the model's: model, BadRenderedFile, the run goes on.
let stack: GatewayStack | undefined;
let url: string;

beforeAll(async () => {
  stack = await startGatewayStack(['--no-auth']);
  ({ url } = stack);
});
afterAll(() => stopGatewayStack(stack));

describe('model-written files through the gateway and the Python client', () => {
  it('"../evil.py", a file that is not text and a missing entrypoint end model/BadRenderedFile; all six drafts get their Result', async () => {
    const { code, lines, stderr } = await runPythonChecks(path.join(REPO_ROOT, 'test', 'fixtures', 'python', 'model_faults_checks.py'), [url]);
    expect(code, stderr).toBe(0);
    const by = Object.fromEntries(lines.map((line) => [line.task as string, line]));
    expect(by).toEqual({
      d1: { task: 'd1', kind: 'ok', reward: 1, error: null },
      d2: { task: 'd2', kind: 'model', reward: null, error: 'BadRenderedFile' },
      d3: { task: 'd3', kind: 'model', reward: null, error: 'BadRenderedFile' },
      d4: { task: 'd4', kind: 'model', reward: null, error: 'BadRenderedFile' },
      d5: { task: 'd5', kind: 'ok', reward: 1, error: null },
      d6: { task: 'd6', kind: 'ok', reward: 1, error: null },
    });
  });
});
