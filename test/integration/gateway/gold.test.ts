import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPythonChecks, startGatewayStack, stopGatewayStack, type GatewayStack } from '../../helpers/gateway-cli.js';
import { REPO_ROOT } from '../cli/cli-process.js';

// Issue 28 item 1 through the any-language edge: a gateway (`--gold-key`) and the Python client
// (`map_rollouts(gold_keys=...)`) against real worker processes. The runs API's Results carry
// goldVisibleToRun; a Dispatch's scenario lacks the gateway's gold keys.
let stack: GatewayStack | undefined;
let url: string;

beforeAll(async () => {
  stack = await startGatewayStack(['--dispatch', 'rq-fixtures/dispatches:noop', '--gold-key', 'expected', '--no-auth']);
  ({ url } = stack);
});
afterAll(() => stopGatewayStack(stack));

describe('the gold through the gateway and the Python client', () => {
  it("map_rollouts(gold_keys=...) and the reward's goldKey keep keys from the run; goldVisibleToRun reaches the Python Result; the dispatch scenario lacks --gold-key", async () => {
    const { code, lines, stderr } = await runPythonChecks(path.join(REPO_ROOT, 'test', 'fixtures', 'python', 'gold_checks.py'), [url]);
    expect(code, stderr).toBe(0);
    const by = new Map(lines.map((line) => [line.check as string, line]));
    expect(by.get('kept')).toEqual({ check: 'kept', kind: 'ok', taskKeys: ['question', 'id'], goldKeys: ['answer', 'notes'], goldVisibleToRun: false });
    expect(by.get('shown')).toEqual({ check: 'shown', kind: 'ok', taskKeys: ['question', 'answer', 'notes', 'id'], goldKeys: [], goldVisibleToRun: true });
    expect(by.get('dispatch')).toEqual({ check: 'dispatch', artifact: { prompt: 'two plus two' } });
  });
});
