import { closeSync, writeSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createStageBoard, readCulprit, readHeartbeat, readRewardStage, readSyncEntry, writeCulprit, writeHeartbeat, writeRewardStage, writeSyncEntry } from '../../../src/consumer/stage-board.js';
import { StageDeadline, type Overrun } from '../../../src/consumer/stage-deadline.js';

// The worker's outside deadline reads the stage from the board only when a deadline could have
// passed; what it reports and when must be what a stage message pushed at the reward's start gave.

describe('StageDeadline', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A deadline whose reward starts when `startReward()` is called; records what fired and when. */
  function watch(limits: { runMs: number; rewardMs: number; graceMs: number }) {
    let since: number | undefined;
    let reads = 0;
    const fired: Array<Overrun & { atMs: number }> = [];
    const t0 = Date.now();
    const deadline = new StageDeadline(limits, () => (reads++, since), (overrun) => fired.push({ ...overrun, atMs: Date.now() - t0 }));
    return { deadline, fired, startReward: (): void => void (since = Date.now()), reads: () => reads };
  }

  it('a run past runMs: stage run, limit runMs, at runMs + grace', () => {
    const { fired } = watch({ runMs: 1000, rewardMs: 5000, graceMs: 100 });
    vi.advanceTimersByTime(1099);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([{ stage: 'run', limit: 'runMs', limitMs: 1000, atMs: 1100 }]);
  });

  it('a reward past its own rewardMs: stage reward, limit rewardMs, at its start + rewardMs + grace', () => {
    const { fired, startReward } = watch({ runMs: 10_000, rewardMs: 1000, graceMs: 100 });
    vi.advanceTimersByTime(2345); // the run took 2345 ms; one read on the way found no reward
    startReward();
    vi.advanceTimersByTime(1099);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([{ stage: 'reward', limit: 'rewardMs', limitMs: 1000, atMs: 3445 }]);
    vi.advanceTimersByTime(20_000);
    expect(fired).toHaveLength(1);
  });

  it('a reward started just after a read is still timed from its own start', () => {
    const { fired, startReward } = watch({ runMs: 10_000, rewardMs: 1000, graceMs: 100 });
    vi.advanceTimersByTime(1101); // the first read (at rewardMs + grace) saw the run stage
    startReward();
    vi.advanceTimersByTime(1099);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([{ stage: 'reward', limit: 'rewardMs', limitMs: 1000, atMs: 2201 }]);
  });

  it('a reward whose rewardMs would end after runMs: ended at runMs, as stage reward', () => {
    const { fired, startReward } = watch({ runMs: 3000, rewardMs: 1000, graceMs: 100 });
    vi.advanceTimersByTime(2500);
    startReward();
    vi.advanceTimersByTime(599);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([{ stage: 'reward', limit: 'runMs', limitMs: 3000, atMs: 3100 }]);
  });

  it('with rewardMs not shorter than runMs the board is read only when runMs fires', () => {
    const { fired, startReward, reads } = watch({ runMs: 1000, rewardMs: 1000, graceMs: 100 });
    vi.advanceTimersByTime(500);
    startReward();
    vi.advanceTimersByTime(599);
    expect(reads()).toBe(0);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([{ stage: 'reward', limit: 'runMs', limitMs: 1000, atMs: 1100 }]);
    expect(reads()).toBe(1);
  });

  it('a long run is looked at once per rewardMs + grace, not more', () => {
    const { fired, reads } = watch({ runMs: 600_000, rewardMs: 60_000, graceMs: 250 });
    vi.advanceTimersByTime(599_000);
    expect(reads()).toBe(9);
    expect(fired).toEqual([]);
  });

  it('clear() stops everything', () => {
    const { deadline, fired, startReward } = watch({ runMs: 1000, rewardMs: 300, graceMs: 10 });
    startReward();
    deadline.clear();
    vi.advanceTimersByTime(5000);
    expect(fired).toEqual([]);
  });

  it('a reward start claimed in the future or before the attempt is kept inside the attempt', () => {
    let since: number | undefined;
    const fired: Overrun[] = [];
    new StageDeadline({ runMs: 10_000, rewardMs: 1000, graceMs: 0 }, () => since, (overrun) => fired.push(overrun));
    since = Date.now() + 1_000_000; // read as "now" (the first read, at 1000 ms)
    vi.advanceTimersByTime(1999);
    expect(fired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(fired).toEqual([{ stage: 'reward', limit: 'rewardMs', limitMs: 1000 }]);
  });
});

describe('stage board', () => {
  it('reads back the reward start of the rollout asked about, never an earlier one', () => {
    const board = createStageBoard();
    try {
      expect(readRewardStage(board, 0, 1)).toBeUndefined();
      writeRewardStage(board, 0, 1, 1_733_000_000_123);
      expect(readRewardStage(board, 0, 1)).toBe(1_733_000_000_123);
      expect(readRewardStage(board, 0, 2)).toBeUndefined();
      writeRewardStage(board, 0, 2, 1_733_000_000_456);
      expect(readRewardStage(board, 0, 2)).toBe(1_733_000_000_456);
      expect(readRewardStage(board, 0, 1)).toBeUndefined();
    } finally {
      closeSync(board);
    }
  });

  it('keeps one reward record per slot: rollouts running at once in one child do not overwrite each other', () => {
    const board = createStageBoard();
    try {
      writeRewardStage(board, 0, 7, 1_000);
      writeRewardStage(board, 3, 9, 3_000);
      writeRewardStage(board, 1, 8, 2_000);
      expect([readRewardStage(board, 0, 7), readRewardStage(board, 1, 8), readRewardStage(board, 3, 9)]).toEqual([1_000, 2_000, 3_000]);
      expect(readRewardStage(board, 2, 8)).toBeUndefined();
    } finally {
      closeSync(board);
    }
  });

  it('holds the heartbeat, the sync entry and the culprit apart from the reward records', () => {
    const board = createStageBoard();
    try {
      expect([readHeartbeat(board), readSyncEntry(board), readCulprit(board)]).toEqual([undefined, undefined, undefined]);
      writeRewardStage(board, 0, 5, 42);
      writeHeartbeat(board, 1234.5);
      writeSyncEntry(board, 5, 1200);
      writeCulprit(board, 4);
      expect(readHeartbeat(board)).toBe(1234.5);
      expect(readSyncEntry(board)).toEqual({ seq: 5, sinceMs: 1200 });
      expect(readCulprit(board)).toBe(4);
      expect(readRewardStage(board, 0, 5)).toBe(42);
      writeSyncEntry(board, 0);
      expect(readSyncEntry(board)).toBeUndefined();
    } finally {
      closeSync(board);
    }
  });

  it('a torn or foreign record reads as no reward', () => {
    const board = createStageBoard();
    try {
      writeRewardStage(board, 0, 3, 1_733_000_000_000);
      writeSync(board, Buffer.from([1, 2, 3, 4]), 0, 4, 72 + 10); // part of a later write of slot 0
      expect(readRewardStage(board, 0, 3)).toBeUndefined();
    } finally {
      closeSync(board);
    }
    expect(readRewardStage(board, 0, 3)).toBeUndefined(); // closed: never throws
    expect(readHeartbeat(board)).toBeUndefined();
  });
});
