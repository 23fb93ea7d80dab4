import { describe, expect, it } from 'vitest';
import { truncationMarker, type RewardFn } from '../../../src/spec/index.js';
import { lastNumber } from '../../../src/rewards/index.js';
import { callerError } from '../../helpers/caller-error.js';

describe('lastNumber', () => {
  const reward = lastNumber();

  it('is a RewardFn', () => {
    const asSpecType: RewardFn = reward;
    expect(typeof asSpecType).toBe('function');
  });

  const cases: Array<[string, unknown, number | string, 0 | 1]> = [
    ['plain last number', 'Step 1: 12 + 21 = 33\nAnswer: 33', 33, 1],
    ['earlier numbers do not count', 'Answer: 33\nchecked with 34', 33, 0],
    ['trailing period', 'So the answer is 33.', 33, 1],
    ['negative answer', 'Answer: -3', -3, 1],
    ['minus after a digit is an operator', 'x = 10-3', 3, 1],
    ['minus after a digit is not a sign', 'x = 10-3', -3, 0],
    ['Unicode minus', 'Answer: −7', -7, 1],
    ['thousands separators', 'Total: 1,234,567 apples', 1234567, 1],
    ['a comma list is not a thousands number', 'values 1,2,3', 3, 1],
    ['decimal', 'Answer: 2.5', 2.5, 1],
    ['leading-dot decimal', 'p = .5', 0.5, 1],
    ['scientific notation', 'about 1e3', 1000, 1],
    ['scientific with a negative exponent', 'eps 2.5E-4', 0.00025, 1],
    ['money and percent', 'cost $1,200.50 or 15%', 15, 1],
    ['digits inside a word', 'abc123', 123, 1],
    ['no number at all', 'I do not know', 0, 0],
    ['empty output', '', 0, 0],
    ['NaN is not a number', 'Answer: NaN', 0, 0],
    ['gold as a numeric string', 'Answer: 1234', '1,234', 1],
    ['gold as a string with spaces', 'Answer: 42', ' 42 ', 1],
    ['float noise within tolerance', 'Answer: 0.30000000000000004', 0.3, 1],
    ['a near miss', 'Answer: 33.001', 33, 0],
    ['codeRunner output reads stdout', { stdout: 'Answer: 8\n', stderr: 'noise 9', exitCode: 0 }, 8, 1],
    ['other objects are JSON', { result: 8 }, 8, 1],
    ['a bare number', 8, 8, 1],
    ['null output', null, 0, 0],
    ['undefined output', undefined, 0, 0],
  ];
  it.each(cases)('%s', (_label, output, gold, expected) => {
    expect(reward({ id: 't', answer: gold }, output)).toBe(expected);
  });

  it('reads another goldKey', () => {
    expect(lastNumber({ goldKey: 'target' })({ target: 5 }, 'is 5')).toBe(1);
  });

  it('relative tolerance for large golds', () => {
    const loose = lastNumber({ tolerance: 0.01 });
    expect(loose({ answer: 1000 }, '1009')).toBe(1);
    expect(loose({ answer: 1000 }, '1011')).toBe(0);
    expect(lastNumber({ tolerance: 0 })({ answer: 0.1 }, '0.1')).toBe(1);
  });

  it('missing gold → CallerError naming goldKey and the task keys', () => {
    const err = callerError(() => reward({ id: 't', question: 'q', solution: 4 }, 'Answer: 4'));
    expect(err.message).toContain('task.answer');
    expect(err.message).toContain('task keys: id, question, solution');
    expect(err.message).toContain('config.goldKey');
    expect(callerError(() => reward({ answer: null }, '1')).message).toContain('task.answer');
  });

  it('non-numeric gold → CallerError', () => {
    expect(callerError(() => reward({ answer: 'forty-two' }, '42')).message).toMatch(/task\.answer must be a number or a numeric string.*"forty-two" \(string\)/);
    expect(callerError(() => reward({ answer: [1] }, '1')).message).toMatch(/task\.answer must be a string, number or boolean/);
    expect(callerError(() => reward({ answer: true }, '1')).message).toMatch(/must be a number or a numeric string/);
  });

  const badConfigs: Array<[unknown, RegExp]> = [
    [{ goldKey: '' }, /config\.goldKey must be a non-empty string/],
    [{ goldKey: 3 }, /config\.goldKey .*got 3 \(number\)/],
    [{ tolerance: -1 }, /config\.tolerance must be a number from 0/],
    [{ tolerance: '0.1' }, /config\.tolerance .*"0\.1" \(string\)/],
    [{ tolerance: 1 }, /config\.tolerance/],
    [{ goldkey: 'answer' }, /config\.goldkey is not an option; allowed options are goldKey, tolerance/],
    ['answer', /config must be an object/],
  ];
  it.each(badConfigs)('refuses config %j', (config, message) => {
    const err = callerError(() => lastNumber(config as never));
    expect(err.message).toMatch(/^lastNumber: /);
    expect(err.message).toMatch(message);
  });

  it('reads the kept tail of a truncated codeRunner output, not a number of the head or the marker (BR-34)', () => {
    const dropped = 98_765;
    const stdout = `step 1 ok\nstep 74897${truncationMarker(dropped)}ok\nAnswer: 5\n`;
    const output = { stdout, stderr: '', exitCode: 0, stdoutTruncated: true, stdoutDroppedBytes: dropped };
    expect(reward({ answer: 5 }, output)).toBe(1);
    // A tail with no number scores 0; the head's 74897 and the marker's count are not read.
    const noNumber = { ...output, stdout: `Answer: 74897${truncationMarker(dropped)}no answer\n` };
    expect(reward({ answer: 74897 }, noNumber)).toBe(0);
    expect(reward({ answer: dropped }, noNumber)).toBe(0);
  });
});
