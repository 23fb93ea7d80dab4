import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { runCli, startCli, uniquePrefix, waitFor } from './cli-process.js';

// A real `worker` and a real `run` with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a tiny collector
// on 127.0.0.1: both export their spans over OTLP/HTTP, and they form one trace.
interface OtlpSpan { readonly traceId: string; readonly spanId: string; readonly name: string }
interface Post { readonly path: string; readonly contentType: string; readonly spans: OtlpSpan[] }

let redis: TestRedis;
let dir: string;
let collector: Server;
let endpoint: string;
const posts: Post[] = [];

beforeAll(async () => {
  redis = await startRedis();
  dir = await mkdtemp(path.join(os.tmpdir(), 'rq-otlp-'));
  collector = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      let spans: OtlpSpan[] = [];
      try {
        const parsed = JSON.parse(body) as { resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[] };
        spans = (parsed.resourceSpans ?? []).flatMap((r) => (r.scopeSpans ?? []).flatMap((s) => s.spans ?? []));
      } catch {
        // not JSON: recorded with no spans, so the content-type assertion says why
      }
      posts.push({ path: `${req.method} ${req.url}`, contentType: String(req.headers['content-type']), spans });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => collector.close(() => resolve()));
  await rm(dir, { recursive: true, force: true });
  await redis?.stop();
});

describe('OTEL_EXPORTER_OTLP_ENDPOINT: the CLI exports traces over OTLP/HTTP', () => {
  it('run and worker POST /v1/traces; enqueue (run) and the attempt (worker) share one trace', async () => {
    const queue = 'cli-otlp';
    const env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('ot'), OTEL_EXPORTER_OTLP_ENDPOINT: endpoint };
    const artifact = path.join(dir, 'two.js');
    await writeFile(artifact, "console.log('2');\n");
    const tasks = path.join(dir, 'tasks.jsonl');
    await writeFile(tasks, `${JSON.stringify({ id: 'a', answer: 2 })}\n`);
    const out = path.join(dir, 'out.jsonl');
    const worker = startCli(['worker', '--queue', queue, '--name', 'otlp-w'], { env });
    try {
      await waitFor(async () => (await runCli(['status', '--queue', queue], { env: { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: undefined } })).stdout.includes('Workers connected: 1'), 30_000, 'the worker');
      const run = await runCli([
        'run', '--tasks', tasks, '--artifact', artifact, '--queue', queue, '--run-id', 'otlp', '--out', out,
        '--run', 'rollout-queue/runners:codeRunner', '--reward', 'rollout-queue/rewards:lastNumber', '--reward-config', '{"goldKey":"answer"}',
      ], { env, cwd: dir });
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(readFileSync(out, 'utf8').trim()) as { kind: string }).toMatchObject({ kind: 'ok' });
    } finally {
      worker.child.kill('SIGTERM');
      expect((await worker.done).code).toBe(0);
    }
    expect(posts.length).toBeGreaterThan(0);
    for (const post of posts) expect([post.path, post.contentType]).toEqual(['POST /v1/traces', 'application/json']);
    const spans = posts.flatMap((post) => post.spans);
    const names = spans.map((span) => span.name).join(', ');
    const enqueue = spans.find((span) => span.name === 'rollout-queue.enqueue');
    const attempt = spans.find((span) => span.name === 'rollout.child');
    expect(enqueue, names).toBeDefined();
    expect(attempt, names).toBeDefined();
    expect(attempt?.traceId).toBe(enqueue?.traceId);
  });
});
