// leaseIdFor / safeTaskKey: lease ids are deterministic BullMQ job ids of safe characters,
// and distinct task keys always give distinct lease ids.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { leaseIdFor, safeTaskKey } from '../../../src/lease/index.js';
import { LeaseIdSchema, MAX_ID_LENGTH } from '../../../src/spec/index.js';

const runIdArb = fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/);

/** Task keys of every sort: safe, unsafe, non-Latin, lone surrogates, long. */
const taskKeyArb = fc.oneof(
  fc.string({ minLength: 1, maxLength: 30, unit: 'binary' }),
  fc.string({ minLength: 1, maxLength: 30, unit: 'grapheme' }),
  fc.stringMatching(/^[A-Za-z0-9._-]{1,30}$/),
  // Few, mostly unsafe characters: many keys clean to the same text, so only the hash separates them.
  fc.string({ minLength: 1, maxLength: 4, unit: fc.constantFrom(' ', '/', ':', 'é', '任', '\uD800', '\uDC00', 'a', '_') }),
  fc.string({ minLength: MAX_ID_LENGTH - 20, maxLength: MAX_ID_LENGTH + 40, unit: fc.constantFrom('a', 'b', ' ') }),
  fc.integer().map(String),
);

/** BullMQ's own checks on a custom job id (`Job.validateOptions` in bullmq/src/classes/job.ts). */
function bullmqRefuses(jobId: string): string | undefined {
  if (`${Number.parseInt(jobId, 10)}` === jobId) return 'Custom Id cannot be integers';
  if (jobId.includes(':') && jobId.split(':').length !== 3) return 'Custom Id cannot contain :';
  return undefined;
}

describe('leaseIdFor', () => {
  it('is "<runId>.<taskKey>" of safe characters, a valid LeaseId and a valid BullMQ job id, for any key', () => {
    fc.assert(
      fc.property(runIdArb, taskKeyArb, (runId, taskKey) => {
        const leaseId = leaseIdFor(runId, taskKey);
        expect(leaseId).toMatch(/^[A-Za-z0-9._-]+$/);
        expect(leaseId.startsWith(`${runId}.`)).toBe(true);
        expect(leaseId.length - runId.length - 1).toBeLessThanOrEqual(MAX_ID_LENGTH);
        expect(LeaseIdSchema.safeParse(leaseId).success).toBe(true);
        expect(bullmqRefuses(leaseId)).toBeUndefined();
      }),
      { numRuns: 1000 },
    );
  });

  it('is deterministic: the same run and key give the same id, in any order of calls', () => {
    fc.assert(
      fc.property(runIdArb, fc.array(taskKeyArb, { minLength: 1, maxLength: 10 }), (runId, keys) => {
        const first = keys.map((key) => leaseIdFor(runId, key));
        const reversed = [...keys].reverse().map((key) => leaseIdFor(runId, key)).reverse();
        expect(reversed).toStrictEqual(first);
      }),
    );
  });

  it('pins the sanitized form, so a coordinator restarted on a new build finds the same leases', () => {
    // Changing this value changes the lease ids of existing runs: resume would enqueue them twice.
    expect(leaseIdFor('run-1', 'a b')).toBe('run-1.a_b-8787cc9dfd0216ba');
  });

  it('keeps safe keys as they are, so lease ids stay readable', () => {
    expect(leaseIdFor('eval-2026', 'task-0001')).toBe('eval-2026.task-0001');
    expect(leaseIdFor('r', 'gsm8k.test.17')).toBe('r.gsm8k.test.17');
    expect(leaseIdFor('r', 'x'.repeat(MAX_ID_LENGTH))).toBe(`r.${'x'.repeat(MAX_ID_LENGTH)}`);
  });

  it('accepts numeric keys (line numbers, numeric task ids), as the same key as their string form', () => {
    expect(leaseIdFor('r', 0)).toBe('r.0');
    expect(leaseIdFor('r', 17)).toBe('r.17');
    expect(leaseIdFor('r', -3)).toBe('r.-3');
    expect(leaseIdFor('r', 1.5)).toBe('r.1.5');
    // task.id 17 and "17" name the same task: a Result's taskId is the string either way.
    expect(leaseIdFor('r', 17)).toBe(leaseIdFor('r', '17'));
    // Even an all-digit run and key give a non-integer job id.
    expect(bullmqRefuses(leaseIdFor('2026', 1))).toBeUndefined();
  });

  it('keeps distinct keys distinct after sanitizing', () => {
    fc.assert(
      fc.property(taskKeyArb, taskKeyArb, (a, b) => {
        fc.pre(a !== b);
        expect(leaseIdFor('r', a)).not.toBe(leaseIdFor('r', b));
      }),
      { numRuns: 3000 },
    );
  });

  it('keeps apart a whole batch of keys that all clean to the same text', () => {
    const alphabet = ['任', '务', '题', '目', '答', '案', ' ', '/', ':', '\t'];
    const keys: string[] = [];
    for (const a of alphabet) for (const b of alphabet) for (const c of alphabet) for (const d of alphabet) keys.push(a + b + c + d);
    const ids = new Set(keys.map((key) => leaseIdFor('r', key)));
    expect(ids.size).toBe(keys.length);
  });

  it('regression: two CJK keys whose 32-bit hashes collided got one lease id', () => {
    expect(leaseIdFor('r', '丁乄么')).not.toBe(leaseIdFor('r', '丶乜一'));
  });

  it('regression: a safe key equal to the sanitized form of another key gets its own lease id', () => {
    const sanitized = safeTaskKey('a b');
    expect(leaseIdFor('r', sanitized)).not.toBe(leaseIdFor('r', 'a b'));
    // The same for a key that only looks sanitized.
    const lookalike = 'item-0123456789abcdef';
    expect(safeTaskKey(lookalike)).not.toBe(lookalike);
    expect(safeTaskKey(safeTaskKey(lookalike))).not.toBe(safeTaskKey(lookalike));
  });

  it('regression: lone surrogates (which UTF-8 turns into one U+FFFD) stay distinct', () => {
    expect(leaseIdFor('r', '\uD800')).not.toBe(leaseIdFor('r', '\uDC00'));
    expect(leaseIdFor('r', '\uD800')).not.toBe(leaseIdFor('r', '\uFFFD'));
  });

  it('cuts long keys to MAX_ID_LENGTH yet keeps keys differing past the cut apart', () => {
    const long = 'k'.repeat(1000);
    const a = leaseIdFor('r', `${long}a`);
    const b = leaseIdFor('r', `${long}b`);
    expect(a).not.toBe(b);
    expect(a.length).toBeLessThanOrEqual(2 + MAX_ID_LENGTH);
    expect(a.startsWith(`r.${'k'.repeat(100)}`)).toBe(true);
  });

  it('refuses an empty task key, saying what to give instead', () => {
    expect(() => leaseIdFor('r', '')).toThrow(/task key is empty/);
  });

  it.each(['', 'run.1', 'run:1', 'run 1', 'run/1', 'x'.repeat(MAX_ID_LENGTH + 1), 'ä'])('refuses runId %j, naming runId', (runId) => {
    expect(() => leaseIdFor(runId, 'task')).toThrow(/runId/);
  });
});
