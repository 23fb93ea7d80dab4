import { expect, it } from 'vitest';
import { createProgress, paceOf } from '../../../src/cli/progress.js';

/** A stream that is no terminal, keeping what was written. */
function plainStream(): { stream: NodeJS.WriteStream; lines: string[] } {
  const lines: string[] = [];
  const stream = { isTTY: false, write: (text: string) => lines.push(text) > 0 } as unknown as NodeJS.WriteStream;
  return { stream, lines };
}

const kinds = (ok: number, model = 0, infrastructure = 0, caller = 0) => ({ ok, model, infrastructure, caller });

// Fresh-user report: `resume` of a run whose 2 Results were all in printed
// "progress: 2/2 results (100%)" twice.
it('off a terminal, each count is shown once, the final one too', () => {
  const { stream, lines } = plainStream();
  const progress = createProgress({ total: 2, initial: 2, stream });
  progress.update({ done: 2, kinds: kinds(2) });
  progress.update({ done: 2, kinds: kinds(2) });
  progress.stop();
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/2\/2/);
});

it('off a terminal, a line per tenth of the total and one for the last', () => {
  const { stream, lines } = plainStream();
  const progress = createProgress({ total: 25, initial: 0, stream });
  for (let done = 1; done <= 25; done++) progress.update({ done, kinds: kinds(done) });
  expect(lines.map((line) => /(\d+)\/25/.exec(line)?.[1])).toEqual(['3', '6', '9', '12', '15', '18', '21', '24', '25']);
});

// Issue 31: progress was "progress: 12/40 results (30%)" only: no rate, no ETA, no kinds.
it('off a terminal, each line has the rate since the start, the ETA at that rate and the counts by kind', () => {
  const { stream, lines } = plainStream();
  let nowMs = 1_000_000;
  const progress = createProgress({ total: 40, initial: 0, stream, now: () => nowMs });
  nowMs += 4_000;
  progress.update({ done: 4, kinds: kinds(3, 1) });
  nowMs += 1_000;
  progress.update({ done: 5, kinds: kinds(3, 2) });
  expect(lines).toEqual(['progress: 4/40 results (10%), 1.0/s, ETA 36s; ok 3, model 1, infra 0, caller 0\n']);
  nowMs += 75_000;
  progress.update({ done: 8, kinds: kinds(5, 2, 1) });
  // 8 in 80 s: 6.0/min, 32 left: 5m 20s.
  expect(lines[1]).toBe('progress: 8/40 results (20%), 6.0/min, ETA 5m 20s; ok 5, model 2, infra 1, caller 0\n');
});

it('a re-attached run counts its rate from what arrives after the start, not what was in the file', () => {
  expect(paceOf(10, 20, 10, 0, 5_000)).toEqual({ perSecond: null, etaSeconds: null });
  expect(paceOf(15, 20, 10, 0, 5_000)).toEqual({ perSecond: 1, etaSeconds: 5 });
  expect(paceOf(15, null, 10, 0, 5_000)).toEqual({ perSecond: 1, etaSeconds: null });
});

it('with no total known, lines every 10 results without an ETA', () => {
  const { stream, lines } = plainStream();
  let nowMs = 0;
  const progress = createProgress({ total: null, initial: 0, stream, now: () => nowMs });
  nowMs = 2_000;
  for (let done = 1; done <= 10; done++) progress.update({ done, kinds: kinds(done) });
  expect(lines).toEqual(['progress: 10 results, 5.0/s; ok 10, model 0, infra 0, caller 0\n']);
});
