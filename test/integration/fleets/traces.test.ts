import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The compiled worker: its children are forked from dist/ (src/ has no runnable child-main.js).
import { RolloutWorker } from '../../../dist/consumer/index.js';
import { createLogger } from '../../../src/platform/logger.js';
import { RolloutQueue, type RolloutDraft } from '../../../src/producer/index.js';
import type { Result } from '../../../src/spec/index.js';
import { fixture, RawQueue, TEST_PREFIX } from '../../helpers/raw-queue.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';

// One trace from the coordinator's enqueue through BullMQ's add and process spans (bullmq-otel)
// into the rollout child, whose ctx.traceparent is the worker's attempt span. The worker runs in
// this process so the in-memory exporter sees its spans; the child is a real process.
let redis: TestRedis;
const exporter = new InMemorySpanExporter();
const silent = createLogger({}, { write: () => true });

beforeAll(async () => {
  redis = await startRedis({ private: true });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
});
afterAll(async () => {
  trace.disable();
  context.disable();
  propagation.disable();
  await redis.stop();
});

async function runOne(raw: RawQueue, telemetry: boolean, runId: string): Promise<Result> {
  const worker = await RolloutWorker.create({ ...raw.workerOptions({ name: `tw-${runId}` }), telemetry, logger: silent } as Parameters<typeof RolloutWorker.create>[0]);
  const rq = await RolloutQueue.create({ redisUrl: redis.url, queue: raw.name, prefix: TEST_PREFIX, reconcileMs: 200, telemetry, logger: silent });
  try {
    const draft: RolloutDraft = { rendered: 'x', task: { id: 't' }, run: fixture('reportsTrace'), reward: fixture('constant') };
    const [result] = await (async () => {
      const items: Result[] = [];
      for await (const r of rq.mapRollouts([draft], { runId })) items.push(r);
      return items;
    })();
    return result as Result;
  } finally {
    await rq.close();
    await worker.close({ graceMs: 0 });
  }
}

describe('traces', () => {
  it('one trace spans coordinator (enqueue, BullMQ add) → worker (BullMQ process, attempt) → child (ctx.traceparent)', async () => {
    const raw = new RawQueue(redis.url);
    try {
      exporter.reset();
      const result = await runOne(raw, true, 'traced');
      expect([result.kind, result.error?.message]).toEqual(["ok", undefined]);
      const spans = exporter.getFinishedSpans();
      const enqueue = spans.find((s) => s.name === 'rollout-queue.enqueue');
      const attempt = spans.find((s) => s.name === 'rollout.child');
      expect(enqueue, spans.map((s) => s.name).join(', ')).toBeDefined();
      expect(attempt, spans.map((s) => s.name).join(', ')).toBeDefined();
      const traceId = enqueue?.spanContext().traceId as string;
      // The parent chain: enqueue → BullMQ add (a batch of one job goes by Queue.add, more by
      // addBulk: both span names start with "add") → BullMQ process → rollout.child.
      const parentOf = (name: string): string | undefined => (spans.find((s) => s.name.startsWith(name)) as unknown as { parentSpanContext?: { spanId: string } } | undefined)?.parentSpanContext?.spanId;
      const idOf = (name: string): string | undefined => spans.find((s) => s.name.startsWith(name))?.spanContext().spanId;
      expect(parentOf('add')).toBe(idOf('rollout-queue.enqueue'));
      expect(parentOf('process')).toBe(idOf('add'));
      expect(parentOf('rollout.child')).toBe(idOf('process'));
      // BullMQ's own spans (add on the producer, process on the worker) are in the same trace.
      const names = spans.filter((s) => s.spanContext().traceId === traceId).map((s) => s.name);
      expect(names).toEqual(expect.arrayContaining(['rollout-queue.enqueue', 'rollout.child']));
      expect(names.some((n) => n.startsWith('addBulk') || n.startsWith('add'))).toBe(true);
      expect(names.some((n) => n.startsWith('process'))).toBe(true);
      expect(attempt?.spanContext().traceId).toBe(traceId);
      // The child got the attempt span as its parent context.
      expect((result.output as { traceparent: string }).traceparent).toBe(`00-${traceId}-${attempt?.spanContext().spanId}-01`);
    } finally {
      await raw.close();
    }
  });

  it('off: no spans, no traceparent in the spec or the child', async () => {
    const raw = new RawQueue(redis.url);
    try {
      exporter.reset();
      const result = await runOne(raw, false, 'untraced');
      expect(result.output).toEqual({ traceparent: null });
      expect(exporter.getFinishedSpans().filter((s) => s.name.startsWith('rollout'))).toEqual([]);
    } finally {
      await raw.close();
    }
  });
});
