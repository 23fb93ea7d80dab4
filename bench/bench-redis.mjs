// The Redis a bench runs against: REDIS_URL when set, else a private redis-server on a free
// loopback port in a temp dir, started and stopped the way the CLI's demo does
// (dist/cli/local-redis.js: persistence off, noeviction, removed afterwards).
import { startLocalRedis } from '../dist/cli/local-redis.js';

/** `private` is true for the bench's own server (only that one may be flushed between trials). */
/** @returns {Promise<{ url: string, private: boolean, stop: () => Promise<void> }>} */
export async function benchRedis() {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, private: false, stop: async () => {} };
  const local = await startLocalRedis();
  return { url: local.url, private: true, stop: () => local.stop() };
}

/**
 * Wraps `proto[name]` so that calling it marks `before` and its promise settling marks `after`
 * (either may be null), through `mark(step)`: how the diagnostics time internal steps.
 */
export const stamper = (mark) => (proto, name, before, after) => {
  const original = proto[name];
  if (typeof original !== 'function') throw new Error(`bench: ${name} is not a method here; the step list is stale`);
  proto[name] = function (...args) {
    if (before) mark(before);
    const out = original.apply(this, args);
    if (after && typeof out?.then === 'function') out.then(() => mark(after), () => {});
    return out;
  };
};
