import { describe, expect, it } from 'vitest';
import { blameExit, type ExitFacts } from '../../../src/consumer/crash-blame.js';

// Who pays for the end of a shared child: each rollout it held is judged on its own.

const died = (facts: Partial<ExitFacts>): ExitFacts => ({ cause: undefined, culprit: undefined, inFlight: 3, ...facts });

describe('blameExit', () => {
  it('a child that died on its own: the rollout that said it ended the process pays, the others do not', () => {
    expect(blameExit(2, false, died({ culprit: 2 }))).toEqual({ kind: 'crashed', blame: 'self' });
    expect(blameExit(1, false, died({ culprit: 2 }))).toEqual({ kind: 'crashed', blame: 'neighbour' });
    // A finished rollout's stray code ended it: nobody running now is to blame.
    expect(blameExit(3, false, died({ culprit: 9 }))).toEqual({ kind: 'crashed', blame: 'neighbour' });
  });

  it('nobody named (a signal, an out-of-memory): alone it is its own crash; shared, everyone retries alone', () => {
    expect(blameExit(1, false, died({ inFlight: 1 }))).toEqual({ kind: 'crashed', blame: 'self' });
    expect(blameExit(1, false, died({ inFlight: 2 }))).toEqual({ kind: 'crashed', blame: 'shared' });
  });

  it('killed for one rollout\'s limit: that rollout ends by its limit, the others are neighbours', () => {
    const cause = { kind: 'limit', seq: 4, limit: 'overran' } as const;
    expect(blameExit(4, false, died({ cause }))).toEqual({ kind: 'limit', limit: 'overran' });
    expect(blameExit(5, false, died({ cause }))).toEqual({ kind: 'crashed', blame: 'neighbour' });
  });

  it('killed by the watchdog: the rollout whose code blocked the loop retries alone, the others are neighbours; unnamed, all retry alone', () => {
    expect(blameExit(7, false, died({ cause: { kind: 'blocked', syncSeq: 7 } }))).toEqual({ kind: 'crashed', blame: 'shared' });
    expect(blameExit(8, false, died({ cause: { kind: 'blocked', syncSeq: 7 } }))).toEqual({ kind: 'crashed', blame: 'neighbour' });
    expect(blameExit(8, false, died({ cause: { kind: 'blocked', syncSeq: undefined } }))).toEqual({ kind: 'crashed', blame: 'shared' });
  });

  it('an aborted rollout (cancel, shutdown, lost lock) ends aborted whatever killed the child, unless its own limit did', () => {
    expect(blameExit(1, true, died({ culprit: 2 }))).toEqual({ kind: 'aborted' });
    expect(blameExit(1, true, died({ cause: { kind: 'blocked', syncSeq: 1 } }))).toEqual({ kind: 'aborted' });
    expect(blameExit(1, true, died({ cause: { kind: 'limit', seq: 1, limit: 'abort' } }))).toEqual({ kind: 'limit', limit: 'abort' });
  });

  it('retired by the pool: no rollout still in it is to blame', () => {
    expect(blameExit(1, false, died({ cause: { kind: 'retired' }, inFlight: 1 }))).toEqual({ kind: 'crashed', blame: 'neighbour' });
  });
});
