import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StageTimer } from '../../../src/consumer/stage-timer.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('StageTimer: one reused Timeout per limit of a rollout child', () => {
  it('fires once, ms after it was armed', () => {
    const timer = new StageTimer();
    const fired = vi.fn();
    timer.arm(100, fired);
    vi.advanceTimersByTime(99);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(1_000);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('disarmed, it calls nothing', () => {
    const timer = new StageTimer();
    const fired = vi.fn();
    timer.arm(100, fired);
    timer.disarm();
    vi.advanceTimersByTime(1_000);
    expect(fired).not.toHaveBeenCalled();
  });

  it('armed again, the limit counts from the new arming and only the new callback fires, whatever the ms', () => {
    const timer = new StageTimer();
    const first = vi.fn();
    const second = vi.fn();
    const third = vi.fn();
    timer.arm(100, first);
    vi.advanceTimersByTime(60);
    timer.disarm();
    timer.arm(100, second);
    vi.advanceTimersByTime(60);
    expect(first).not.toHaveBeenCalled();
    expect(second).not.toHaveBeenCalled();
    vi.advanceTimersByTime(40);
    expect(second).toHaveBeenCalledTimes(1);
    timer.arm(30, third);
    vi.advanceTimersByTime(29);
    expect(third).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(third).toHaveBeenCalledTimes(1);
  });

  it('armed again after it fired, it fires again', () => {
    const timer = new StageTimer();
    const fired = vi.fn();
    timer.arm(50, fired);
    vi.advanceTimersByTime(50);
    timer.arm(50, fired);
    vi.advanceTimersByTime(50);
    expect(fired).toHaveBeenCalledTimes(2);
  });
});
