import { describe, expect, it } from 'vitest';
import { cliCommand } from '../../../src/cli/cli-command.js';
import { MSG } from '../../../src/cli/messages.js';

// Regression (fresh-user report): after Ctrl-C of a run with un-enqueued specs, `resume` printed
// the library's advice ("call mapRollouts again") to a CLI user.
describe('CLI advice when a run was interrupted before every spec was enqueued', () => {
  const producerError = 'run "mif1": 12 specs were never enqueued (the coordinator stopped while enqueuing); call mapRollouts again with the same runId to enqueue them';

  it('resume names the count and the CLI command that finishes the run, not the library call', () => {
    const text = MSG.resumeNeedsSpecs('mif1', producerError, 'fq', 'r.jsonl');
    expect(text).toContain('12 of its specs were never enqueued');
    // The command as this process prints it: with REDIS_URL set (as `npm test` allows), it leads with it.
    expect(text).toContain(`run the same \`${cliCommand()} run\` command again with --run-id mif1 --queue fq --out r.jsonl`);
    expect(text).not.toContain('mapRollouts');
  });

  // Fresh-user report: `status r9` pasted from the "incomplete" line looked on queue "rollouts".
  it('the hints of an incomplete, refused or failed run name the queue (and resume its --out)', () => {
    expect(MSG.runIncomplete('r9', 239, 240, '/tmp/r9.jsonl', 'fq')).toContain('rollout-queue status r9 --queue fq shows the run record');
    expect(MSG.runRefused('r9', 'error line', 'fq', '/tmp/r9.jsonl')).toContain('rollout-queue resume r9 --queue fq --out /tmp/r9.jsonl (or the same run command with --run-id r9)');
    expect(MSG.runFailed('r9', 'why', 'fq', '/tmp/r9.jsonl')).toContain('rollout-queue resume r9 --queue fq --out /tmp/r9.jsonl (or the same run command with --run-id r9)');
    expect(MSG.runIncomplete('r9', 239, 240, '/tmp/r9.jsonl', 'rollouts')).toContain('rollout-queue status r9 shows');
  });

  it('the interrupt hint says when to re-run instead of resume', () => {
    const text = MSG.runInterrupted('mif1', 'results-mif1.jsonl', 'rollouts', undefined);
    expect(text).toContain('rollout-queue resume mif1 --out results-mif1.jsonl');
    expect(text).toContain('run the same run command again with --run-id mif1');
  });

  // Fresh-user report: with --max-in-flight 6, Ctrl-C after 12 of 60 advised resume first
  // (which then exited 1 with "failed"), though the coordinator knew 42 were not enqueued.
  it('the interrupt hint of a run with specs not yet enqueued names the run command, and resume when all were', () => {
    const partial = MSG.runInterrupted('int3', 'r.jsonl', 'rollouts', 42);
    expect(partial).toContain('interrupted before every task was enqueued (42 not yet)');
    expect(partial).toContain('the same run command again, with --run-id int3 --out r.jsonl');
    expect(partial).not.toContain('rollout-queue resume');
    const whole = MSG.runInterrupted('int3', 'r.jsonl', 'rollouts', 0);
    expect(whole).toContain('rollout-queue resume int3 --out r.jsonl');
    expect(whole).not.toContain('run command again');
  });
});

// Fresh-user report (helper-33): the reason stored in the run record read "cancelled with
// `REDIS_URL=… node bin/rollout-queue.js cancel`", a hint without its run id.
describe('the cancel reason stored in the run record', () => {
  it('says how the run was cancelled, without connection settings, whatever the environment', () => {
    expect(MSG.cancelReason).toBe('cancelled with `rollout-queue cancel`');
  });
});
