import { expect, it } from 'vitest';
import { createProgress } from '../../../src/cli/progress.js';

/** A stream that is no terminal, keeping what was written. */
function plainStream(): { stream: NodeJS.WriteStream; lines: string[] } {
  const lines: string[] = [];
  const stream = { isTTY: false, write: (text: string) => lines.push(text) > 0 } as unknown as NodeJS.WriteStream;
  return { stream, lines };
}

// Fresh-user report: `resume` of a run whose 2 Results were all in printed
// "progress: 2/2 results (100%)" twice.
it('off a terminal, each count is shown once, the final one too', () => {
  const { stream, lines } = plainStream();
  const progress = createProgress({ total: 2, initial: 2, stream });
  progress.update(2);
  progress.update(2);
  progress.stop();
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/2\/2/);
});

it('off a terminal, a line per tenth of the total and one for the last', () => {
  const { stream, lines } = plainStream();
  const progress = createProgress({ total: 25, initial: 0, stream });
  for (let done = 1; done <= 25; done++) progress.update(done);
  expect(lines.map((line) => /(\d+)\/25/.exec(line)?.[1])).toEqual(['3', '6', '9', '12', '15', '18', '21', '24', '25']);
});
