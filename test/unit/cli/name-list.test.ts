import { describe, expect, it } from 'vitest';
import { MSG } from '../../../src/cli/messages.js';
import { nameList, queuesUsedThere } from '../../../src/cli/messages/message-parts.js';

const names = (count: number, stem = 'q'): string[] => Array.from({ length: count }, (_, i) => `${stem}${String(i).padStart(2, '0')}`);

// Fresh-user report: `cancel noworker1 --queue emptyq` on a Redis with 60+ queues under another
// prefix printed every queue name on one line.
describe('lists of names in messages', () => {
  it('nameList names a few and counts the rest', () => {
    expect(nameList([])).toBe('');
    expect(nameList(['a', 'b'])).toBe('a, b');
    expect(nameList(names(5))).toBe('q00, q01, q02, q03, q04');
    expect(nameList(names(62))).toBe('q00, q01, q02, q03, q04 and 57 more');
    expect(nameList(names(12), 10)).toBe('q00, q01, q02, q03, q04, q05, q06, q07, q08, q09 and 2 more');
  });

  it('caps the queues of a prefix, the queues of each other prefix, and the prefixes', () => {
    expect(queuesUsedThere({ queues: names(62), elsewhere: new Map() })).toBe('queues used there: q00, q01, q02, q03, q04 and 57 more');
    const elsewhere = new Map(names(8, 'p').map((prefix) => [prefix, names(62)]));
    expect(queuesUsedThere({ queues: [], elsewhere })).toBe(
      'no queue there was used yet; prefixes used in this Redis: ' +
        ['p00', 'p01', 'p02', 'p03', 'p04'].map((prefix) => `"${prefix}" (q00, q01, q02, q03, q04 and 57 more)`).join(', ') +
        ' and 3 more; set ROLLOUT_QUEUE_PREFIX to one of them',
    );
  });

  it('caps the queues holding a run, the dashboard\'s queues and an artifact\'s files', () => {
    expect(MSG.runNotFound('r1', 'q', 'rq', undefined, names(7))).toContain('it is on queue "q00", "q01", "q02", "q03", "q04" and 2 more: add --queue q00');
    expect(MSG.dashboardQueues(names(30), true)).toBe('showing queue(s) q00, q01, q02, q03, q04, q05, q06, q07, q08, q09 and 20 more (read-only; --writable enables retry/remove/clean)');
    expect(MSG.entrypointNotInArtifact('x.py', names(11, 'f'))).toContain('(its files: "f00", "f01", "f02", "f03", "f04", "f05", "f06", "f07", "f08", "f09" and 1 more)');
    expect(MSG.entrypointNotInArtifact('x.py', [])).toContain('(its files: none)');
  });
});
