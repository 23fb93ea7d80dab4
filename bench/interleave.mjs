// The benches' common method: each trial a fresh Node process (`<script> --trial <name> <url>
// <params>`, printing its measures as the last line of JSON), the sides of a comparison run
// interleaved A B A B, REPS times each, on one Redis flushed between trials; figures min / median / max.
import { spawn } from 'node:child_process';
import { benchRedis } from './bench-redis.mjs';

/** The bench's Redis (bench-redis.mjs) with `flush`, for a private one only (a given REDIS_URL is never flushed). */
export async function startBenchRedis() {
  const redis = await benchRedis();
  if (!redis.private) return redis;
  const { Redis } = await import('ioredis');
  const probe = new Redis(redis.url);
  return { ...redis, flush: () => probe.flushall(), stop: async () => { probe.disconnect(); await redis.stop(); } };
}

/** Runs trial `name` of `script` in a fresh process; resolves with the JSON of its last output line. */
export function runTrial(script, name, url, params) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [script, '--trial', name, url, JSON.stringify(params)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (d) => (out += d));
    proc.on('close', (code) => {
      const line = out.trim().split('\n').at(-1);
      if (code !== 0 || !line) reject(new Error(`trial ${name} exited ${code}: ${out}`));
      else resolve(JSON.parse(line));
    });
  });
}

/** Runs the sides of one comparison interleaved, `reps` times each; returns trials per side. */
export async function compare(script, redis, sides, params, reps) {
  const trials = Object.fromEntries(sides.map((side) => [side, []]));
  for (let rep = 0; rep < reps; rep++) {
    for (const side of sides) {
      await redis.flush?.();
      trials[side].push(await runTrial(script, side, redis.url, params));
    }
  }
  return trials;
}

/** min, median and max of `values`. */
export const stats = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { min: sorted[0], median: sorted[Math.floor(sorted.length / 2)], max: sorted.at(-1) };
};

/** `min / median / max` with `digits` decimals. */
export const fmt = (s, digits = 1) => `${s.min.toFixed(digits)} / ${s.median.toFixed(digits)} / ${s.max.toFixed(digits)}`;
