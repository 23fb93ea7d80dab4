import { describe, expect, it } from 'vitest';
import { checkCallOptions } from '../../../src/producer/call-options.js';

const MAP_ROLLOUTS = ['runId', 'signal', 'runAttemptId', 'specCount', 'sourceFingerprint', 'coordinatorNote', 'checkPreviousNote'];

describe('checkCallOptions', () => {
  // Fresh-user report (helper-30): README's "mapRollouts keeps at most maxInFlight" read as a
  // call option; `mapRollouts(drafts, { runId, maxInFlight: 5 })` was refused as "not an option".
  it('names an option of RolloutQueue.create passed to a call as the queue\'s, with where it goes', () => {
    expect(() => checkCallOptions('mapRollouts', { runId: 'r1', maxInFlight: 5 }, MAP_ROLLOUTS, 'runId')).toThrow(
      'mapRollouts option "maxInFlight" is an option of the whole queue, not of one call: pass it to RolloutQueue.create({ maxInFlight: … }); mapRollouts\'s options are runId, signal, runAttemptId, specCount, sourceFingerprint, coordinatorNote, checkPreviousNote',
    );
  });

  it('still offers the closest call option for a misspelling', () => {
    expect(() => checkCallOptions('mapRollouts', { runId: 'r1', signl: new AbortController().signal }, MAP_ROLLOUTS, 'runId')).toThrow('mapRollouts option "signl" is not an option (did you mean "signal"?)');
  });

  it('takes the call\'s own options', () => {
    expect(() => checkCallOptions('mapRollouts', { runId: 'r1', specCount: 3 }, MAP_ROLLOUTS, 'runId')).not.toThrow();
  });
});
