// Fair share between runs (issue 33 item 5): time to the first Result of a small run started
// after a big run has filled its in-flight window, with fair share (default) and without it
// (`fairShare: false`: first in first out across runs, the behaviour before). Each trial is a
// fresh process: a RolloutWorker (its rollouts in its own children) and one RolloutQueue, a big
// run of BIG tasks (maxInFlight WINDOW) and, once the big run delivered its first Result, a
// small run of SMALL tasks; the trial ends when the small run is done (the big run is cancelled).
// Sides interleaved, REPS each; min / median / max. CPU and RSS are the trial process's own
// (coordinator + worker main process; the rollout children are not counted).
//   node bench/fair-share.mjs [REPS=3] [BIG=5000] [SMALL=150] [WINDOW=500] [CONCURRENCY=8] [TASK_MS=20]
import { readFileSync } from 'node:fs';
import { compare, fmt, startBenchRedis, stats } from './interleave.mjs';

const SCRIPT = new URL(import.meta.url).pathname;

async function trial(side, url, params) {
  const { RolloutQueue } = await import('../dist/producer/index.js');
  const { RolloutWorker } = await import('../dist/consumer/index.js');
  const { createLogger } = await import('../dist/platform/logger.js');
  const quiet = createLogger({}, { write: () => true });
  const queue = `fair-${process.pid}`;
  const worker = await RolloutWorker.create({ redisUrl: url, queue, concurrency: params.concurrency, allow: ['rq-fixtures/*'], logger: quiet });
  const rq = await RolloutQueue.create({ redisUrl: url, queue, maxInFlight: params.window, fairShare: side === 'fair', logger: quiet });
  const drafts = (count, label) => Array.from({ length: count }, (_, i) => ({
    rendered: 'x', task: { id: `${label}${i}`, delayMs: params.taskMs },
    run: { $ref: 'rq-fixtures/failures:echo', config: {} }, reward: { $ref: 'rq-fixtures/failures:constant', config: {} },
  }));
  const cancelBig = new AbortController();
  let bigFirst;
  const bigFirstSeen = new Promise((resolve) => (bigFirst = resolve));
  let bigDelivered = 0;
  const big = (async () => {
    try {
      for await (const _ of rq.mapRollouts(drafts(params.big, 'b'), { runId: 'big', signal: cancelBig.signal })) {
        bigDelivered++;
        bigFirst();
      }
    } catch { /* cancelled at the end */ }
  })();
  await bigFirstSeen;
  const cpuStart = process.cpuUsage();
  const startedAt = performance.now();
  const bigAtStart = bigDelivered;
  let firstMs;
  let bigBeforeFirst;
  let count = 0;
  for await (const _ of rq.mapRollouts(drafts(params.small, 's'), { runId: 'small' })) {
    if (firstMs === undefined) {
      firstMs = performance.now() - startedAt;
      bigBeforeFirst = bigDelivered - bigAtStart;
    }
    count++;
  }
  const smallDoneMs = performance.now() - startedAt;
  const cpu = process.cpuUsage(cpuStart);
  const rssMb = Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) / 1024;
  cancelBig.abort('bench done');
  await big;
  await rq.close();
  await worker.close({ graceMs: 0 });
  return { firstMs, smallDoneMs, bigBeforeFirst, cpuMsPerRollout: (cpu.user + cpu.system) / 1000 / (count + bigDelivered - bigAtStart), rssMb };
}

if (process.argv[2] === '--trial') {
  const result = await trial(process.argv[3], process.argv[4], JSON.parse(process.argv[5]));
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}

const [reps = 3, big = 5000, small = 150, window = 500, concurrency = 8, taskMs = 20] = process.argv.slice(2).map(Number);
const params = { big, small, window, concurrency, taskMs };
const redis = await startBenchRedis();
try {
  const trials = await compare(SCRIPT, redis, ['fifo', 'fair'], params, reps);
  console.log(`fair share: small run of ${small} started after a run of ${big} (window ${window}), worker concurrency ${concurrency}, rollouts of ${taskMs} ms; ${reps} reps, min / median / max`);
  for (const [side, list] of Object.entries(trials)) {
    const s = (key) => stats(list.map((t) => t[key]));
    console.log(`${side.padEnd(5)} first Result ${fmt(s('firstMs'), 0)} ms | big Results before it ${fmt(s('bigBeforeFirst'), 0)} | small run done ${fmt(s('smallDoneMs'), 0)} ms | CPU ${fmt(s('cpuMsPerRollout'), 2)} ms/rollout | peak RSS ${fmt(s('rssMb'), 0)} MiB`);
  }
  const ratio = stats(trials.fifo.map((t) => t.firstMs)).median / stats(trials.fair.map((t) => t.firstMs)).median;
  console.log(`time to first Result, median fifo / fair: ${ratio.toFixed(1)}x`);
} finally {
  await redis.stop();
}
