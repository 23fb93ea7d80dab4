import { describe, expect, it } from 'vitest';
import { cliEnvironment } from '../../../src/cli/environment.js';

// Fresh-user report: `REDIS_URL='' rollout-queue status` read the local Redis on 6379 without a
// word (a shell expansion that came out empty looks just like that).
describe('cliEnvironment', () => {
  const capture = (): { lines: string[]; stream: { write: (text: string) => boolean } } => {
    const lines: string[] = [];
    return { lines, stream: { write: (text: string) => lines.push(text) > 0 } };
  };

  it('says so when REDIS_URL is set but blank, and uses the default', () => {
    for (const blank of ['', '   ']) {
      const { lines, stream } = capture();
      expect(cliEnvironment({ REDIS_URL: blank }, stream).redisUrl).toBe('redis://127.0.0.1:6379');
      expect(lines.join('')).toBe('warning: REDIS_URL is set but empty: using redis://127.0.0.1:6379; unset it to mean that, or set the address you meant\n');
    }
  });

  it('says nothing when REDIS_URL is unset or set', () => {
    const { lines, stream } = capture();
    expect(cliEnvironment({}, stream).redisUrl).toBe('redis://127.0.0.1:6379');
    expect(cliEnvironment({ REDIS_URL: 'redis://10.0.0.5:6380/2' }, stream).redisUrl).toBe('redis://10.0.0.5:6380/2');
    expect(lines).toEqual([]);
  });
});
