import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/cli/errors.js';
import { COMMAND_REWARD, refuseUnshippedJudgeFiles } from '../../../src/cli/reward-files.js';

// Fresh-user report: a command reward naming judge.py, present here but not shipped, ran every
// rollout to `model` / RewardThrew:NonZeroExit ("can't open file"), exit 0.
const cwd = mkdtempSync(path.join(os.tmpdir(), 'rq-reward-files-'));
writeFileSync(path.join(cwd, 'judge.py'), 'print(1)\n');
mkdirSync(path.join(cwd, 'judge'));
writeFileSync(path.join(cwd, 'judge', 'judge.py'), 'print(1)\n');
mkdirSync(path.join(cwd, 'artifact'));
writeFileSync(path.join(cwd, 'artifact', 'main.py'), 'print(1)\n');
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

function refusal(config: Record<string, unknown>, reward = COMMAND_REWARD): string | undefined {
  try {
    refuseUnshippedJudgeFiles(reward, config, cwd);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
}

describe('refuseUnshippedJudgeFiles', () => {
  it('refuses a command argument that is a file here but not shipped, naming it and --reward-file', () => {
    expect(refusal({ command: ['python3', 'judge.py'] })).toBe(
      '--reward-config: command[1] is "judge.py", a file here that is not shipped to the judge, which runs in its own directory on the worker: add --reward-file judge.py. Nothing was enqueued.',
    );
    expect(refusal({ command: ['./judge.py'] })).toContain('command[0] is "./judge.py"');
  });

  it('passes the shipped file, under any spelling of its path', () => {
    expect(refusal({ command: ['python3', 'judge.py'], files: { 'judge.py': 'print(1)' } })).toBeUndefined();
    expect(refusal({ command: ['python3', './judge.py'], files: { 'judge.py': 'print(1)' } })).toBeUndefined();
    expect(refusal({ command: ['python3', 'judge/judge.py'], files: { './judge/judge.py': 'print(1)' } })).toBeUndefined();
  });

  it('passes what is not a file here: interpreter names, flags, modules, absolute paths, missing files', () => {
    expect(refusal({ command: ['python3', '-m', 'mypkg.judge'] })).toBeUndefined();
    expect(refusal({ command: ['python3', path.join(cwd, 'judge.py')] })).toBeUndefined();
    expect(refusal({ command: ['python3', 'judge'] })).toBeUndefined();
    expect(refusal({ command: ['python3', 'nope.py'] })).toBeUndefined();
  });

  it('a path with a directory: --reward-file ships it under its base name, so the fix says both', () => {
    expect(refusal({ command: ['python3', 'judge/judge.py'] })).toContain('add --reward-file judge/judge.py and write "judge.py" in "command"');
    expect(refusal({ command: ['python3', 'judge/judge.py'], files: { 'judge.py': 'print(1)' } })).toContain('the judge\'s file is shipped as "judge.py"');
  });

  it('with seeWorkDir, the run\'s files under artifact/ are the judge\'s', () => {
    expect(refusal({ command: ['python3', 'judge.py', 'artifact/main.py'], files: { 'judge.py': '' }, seeWorkDir: true })).toBeUndefined();
    expect(refusal({ command: ['python3', 'judge.py', 'artifact/main.py'], files: { 'judge.py': '' } })).toContain('command[2] is "artifact/main.py"');
  });

  it('leaves other rewards and malformed configs to their own checks', () => {
    expect(refusal({ command: ['python3', 'judge.py'] }, 'rollout-queue/rewards:lastNumber')).toBeUndefined();
    expect(refusal({ command: 'python3 judge.py' })).toBeUndefined();
  });
});
