import { describe, expect, it } from 'vitest';
import { command } from '../../../src/rewards/index.js';
import { compileCommandRewardOptions } from '../../../src/rewards/command-options.js';
import { readJudgeReply } from '../../../src/rewards/command-reply.js';
import { findRewardDetailsIssue, MAX_REWARD_DETAILS_BYTES, rewardParts } from '../../../src/spec/reward-details.js';
import { callerError } from '../../helpers/caller-error.js';
import { fakeContext } from '../runners/fake-context.js';

describe('command reward config (checked at factory time)', () => {
  it('takes a command, shipped files, limits and gold keys; defaults the rest', () => {
    expect(compileCommandRewardOptions({ command: ['python3', '-m', 'mypkg.judge'] })).toMatchObject({
      command: ['python3', '-m', 'mypkg.judge'], timeoutMs: 30_000, memoryMb: undefined, goldKeys: ['answer'], programFile: undefined,
    });
    const compiled = compileCommandRewardOptions({ command: ['./judge'], files: { './judge': '#!/bin/sh\necho 1\n', 'lib/util.py': '' }, timeoutMs: 500, memoryMb: 64, goldKeys: 'solution' });
    expect([...compiled.files.keys()]).toEqual(['judge', 'lib/util.py']);
    expect(compiled).toMatchObject({ programFile: 'judge', timeoutMs: 500, memoryMb: 64, goldKeys: ['solution'] });
    expect(compileCommandRewardOptions({ command: ['python3', 'judge.py'], goldKeys: [] }).goldKeys).toEqual([]);
  });

  it('seeWorkDir (default false) marks the reward function so the worker hands it the run\'s work dir', () => {
    expect(compileCommandRewardOptions({ command: ['x'] }).seeWorkDir).toBe(false);
    expect(command({ command: ['x'] }).seesWorkDir).toBeUndefined();
    expect(command({ command: ['x'], seeWorkDir: true }).seesWorkDir).toBe(true);
    expect(callerError(() => command({ command: ['x'], seeWorkDir: true, files: { 'artifact/a.py': '' } })).message).toContain('with seeWorkDir the run\'s files go under artifact/');
    expect(callerError(() => command({ command: ['x'], seeWorkDir: 'yes' } as never)).message).toContain('config.seeWorkDir must be true or false');
  });

  it('the factory declares its gold keys, so the worker keeps them from the run', () => {
    expect(command({ command: ['python3', 'judge.py'] }).goldKeys).toEqual(['answer']);
    expect(command({ command: ['python3', 'judge.py'], goldKeys: ['gold', 'rubric'] }).goldKeys).toEqual(['gold', 'rubric']);
  });

  it.each([
    ['no config', undefined, 'config.command is required'],
    ['no command', { files: {} }, 'config.command is required'],
    ['a command string', { command: 'python3 judge.py' }, 'config.command must be a non-empty array of strings, got "python3 judge.py" (string)'],
    ['an empty command', { command: [] }, 'config.command must be a non-empty array'],
    ['an empty program', { command: [''] }, 'config.command[0] must be a string naming a program'],
    ['a number argument', { command: ['python3', 3] }, 'config.command[1] must be a string'],
    ['a misspelt option', { command: ['x'], timeoutms: 5 }, 'config.timeoutms is not an option; allowed options are command, files, timeoutMs, memoryMb, goldKeys, seeWorkDir'],
    ['files as an array', { command: ['x'], files: ['judge.py'] }, 'config.files must be an object of relative path'],
    ['an absolute file path', { command: ['x'], files: { '/etc/judge.py': '' } }, 'config.files path "/etc/judge.py" is absolute'],
    ['a file escaping with ..', { command: ['x'], files: { '../judge.py': '' } }, 'leaves the artifact directory'],
    ['file content not text', { command: ['x'], files: { 'judge.py': 5 } }, 'config.files["judge.py"] must be the file\'s text, got 5 (number)'],
    ['a file that is also a directory', { command: ['x'], files: { lib: '', 'lib/a.py': '' } }, '"lib" both as a file and as the directory of "lib/a.py"'],
    ['a zero timeout', { command: ['x'], timeoutMs: 0 }, 'config.timeoutMs must be an integer number of milliseconds from 1 to 86400000, got 0 (number); omit it for the default 30000'],
    ['a fractional memory', { command: ['x'], memoryMb: 1.5 }, "config.memoryMb must be an integer number of MiB from 16"],
    ['an empty gold key', { command: ['x'], goldKeys: [''] }, 'config.goldKeys must be a task key or an array of task keys'],
  ])('refuses %s, naming the field and the fix', (_name, config, message) => {
    expect(callerError(() => command(config as never)).message).toContain(message);
  });
});

describe('the judge runs inside its rollout\'s limits', () => {
  it('config.memoryMb above the spec\'s sandbox.memoryMb is caller, before any program starts', async () => {
    const reward = command({ command: ['python3', 'judge.py'], memoryMb: 1024 });
    await expect(reward({ id: 't' }, 'out', fakeContext({ memoryMb: 256 }))).rejects.toThrow(
      'command: config.memoryMb = 1024 MiB is above the rollout\'s sandbox.memoryMb = 256 MiB; a reward runs inside its rollout\'s limits: lower config.memoryMb or raise sandbox.memoryMb',
    );
  });
});

describe("reading the judge's stdout", () => {
  it('a number, or {"reward", "details"}', () => {
    expect(readJudgeReply('0.75\n')).toBe(0.75);
    expect(readJudgeReply('  1e-3 ')).toBe(0.001);
    expect(readJudgeReply('{"reward": 1, "details": {"got": 5}}\n')).toEqual({ reward: 1, details: { got: 5 } });
    expect(readJudgeReply('{"reward": 0}')).toEqual({ reward: 0 });
  });

  // Fresh-user report: a judge printing `+1` or `.5` (Python's float() reads both) ended caller.
  it('a decimal number as any language prints it: +1, .5, 1.', () => {
    expect(readJudgeReply('+1\n')).toBe(1);
    expect(readJudgeReply('.5')).toBe(0.5);
    expect(readJudgeReply('1.')).toBe(1);
    expect(readJudgeReply('-2.5E-1')).toBe(-0.25);
  });

  it.each([
    ['nothing', '  \n', 'printed nothing on stdout'],
    ['text', 'abc\n', 'printed "abc", which is not a number or a JSON object'],
    ['two lines', '0.5\n1\n', 'printed "0.5\\n1"'],
    ['NaN', 'NaN', 'printed "NaN"'],
    ['a number past a double', '1e999', 'printed "1e999", which is not a finite number'],
    ['a bare point', '.', 'printed ".", which is not a number'],
    ['a string number', '"0.5"', 'not a number or a JSON object'],
    ['no reward key', '{"score": 1}', 'with "score" besides "reward" and "details"'],
    ['a text reward', '{"reward": "1"}', 'whose "reward" is "\\"1\\""'],
  ])('refuses %s as caller / RewardOutOfRange, saying what to print', (_name, stdout, message) => {
    const err = callerError(() => readJudgeReply(stdout));
    expect((err as unknown as { type: string }).type).toBe('RewardOutOfRange');
    expect(err.message).toContain(message);
    expect(err.message).toContain('print one finite number');
  });
});

describe('reward details', () => {
  it('a reward function may return { reward, details }; anything else is the score as it is', () => {
    expect(rewardParts(1)).toEqual({ reward: 1 });
    expect(rewardParts({ reward: 1, details: { a: 1 } })).toEqual({ reward: 1, details: { a: 1 } });
    expect(rewardParts({ reward: 1 })).toEqual({ reward: 1 });
    // Another object is no reward: the range check refuses it by its type.
    expect(rewardParts({ reward: 1, extra: 2 })).toEqual({ reward: { reward: 1, extra: 2 } });
    expect(rewardParts('1')).toEqual({ reward: '1' });
  });

  it('are plain JSON within the size limit', () => {
    expect(findRewardDetailsIssue({ got: 5, cases: [1, 2, { ok: true }] })).toBeUndefined();
    expect(findRewardDetailsIssue({ log: 'x'.repeat(MAX_REWARD_DETAILS_BYTES) })?.message).toContain(`over the ${MAX_REWARD_DETAILS_BYTES}-byte limit`);
    expect(findRewardDetailsIssue({ when: new Date(0) })?.path).toBe('details.when');
    expect(findRewardDetailsIssue({ n: Number.NaN })?.path).toBe('details.n');
  });
});
