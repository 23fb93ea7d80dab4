import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { hostTimeOf, runScriptsOnRedisClock, TIMESTAMP_ARG } from '../../../src/consumer/bull-redis-clock.js';

// The worker puts BullMQ's own scripts on the Redis clock by replacing one argument of each
// (src/consumer/bull-redis-clock.ts). The positions come from the scripts' headers in the
// installed BullMQ: an upgrade that moves one must fail here, not skew a fleet silently.
const commandsDir = path.join(path.dirname(createRequire(import.meta.url).resolve('bullmq')), '..', 'esm', 'commands');

/** The script file of `name` (`<name>-<keys>.lua`), its key count, and its ARGV header lines. */
function scriptHeader(name: string): { keys: number; header: string } {
  const file = readdirSync(commandsDir).find((f) => new RegExp(`^${name}-\\d+\\.lua$`).test(f));
  if (!file) throw new Error(`no ${name}-<keys>.lua in ${commandsDir}`);
  return { keys: Number(/-(\d+)\.lua$/.exec(file)?.[1]), header: readFileSync(path.join(commandsDir, file), 'utf8').split(']]')[0] as string };
}

describe('BullMQ scripts on the Redis clock', () => {
  for (const [name, index] of Object.entries(TIMESTAMP_ARG)) {
    it(`${name}: argument ${index} is the script's timestamp ARGV`, () => {
      const { keys, header } = scriptHeader(name);
      const argv = index - keys + 1;
      expect(header).toMatch(new RegExp(`ARGV\\[${argv}\\]\\s+timestamp`));
    });
  }

  it('replaces only those timestamps, with the clock\'s time, and leaves other commands alone', async () => {
    const calls: { name: string; args: unknown[] }[] = [];
    const backend = { execCommand: async (_client: unknown, name: string, args: unknown[]) => void calls.push({ name, args }) };
    runScriptsOnRedisClock(backend, { nowMs: () => 42 });
    const active = Array.from({ length: 14 }, (_, i) => `a${i}`);
    await backend.execCommand(null, 'moveToActive', active);
    await backend.execCommand(null, 'extendLock', ['k', 't', 1000]);
    expect(calls[0]?.args[TIMESTAMP_ARG.moveToActive as number]).toBe(42);
    expect(calls[0]?.args.filter((a) => a !== 42)).toHaveLength(active.length - 1);
    expect(active[12]).toBe('a12'); // the caller's array is not changed
    expect(calls[1]?.args).toEqual(['k', 't', 1000]);
  });

  it('refuses a backend it cannot wrap, naming the file to look at', () => {
    expect(() => runScriptsOnRedisClock({}, { nowMs: () => 0 })).toThrow(/bull-redis-clock\.ts/);
  });

  it('hostTimeOf: a Redis-clock instant as the same instant on this host', () => {
    const now = vi.spyOn(Date, 'now').mockReturnValue(1_000_000);
    try {
      // This host 10 min behind Redis: due 5 s from now on Redis' clock is 5 s from now here.
      expect(hostTimeOf(1_600_000 + 5_000, { nowMs: () => 1_600_000 })).toBe(1_005_000);
    } finally {
      now.mockRestore();
    }
  });
});
