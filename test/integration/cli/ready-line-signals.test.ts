import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { dashboardAction } from '../../../src/cli/actions/dashboard.js';
import { gatewayAction } from '../../../src/cli/actions/gateway.js';
import { dashboardCommand } from '../../../src/cli/commands/dashboard.js';
import { gatewayCommand } from '../../../src/cli/commands/gateway.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { uniquePrefix } from './cli-process.js';

/**
 * The long-running commands that print a readiness line (`dashboard: URL`, `gateway: URL`) stop
 * cleanly on a signal sent as soon as that line is read. CI under load: the dashboard printed
 * its URL, the test read it and sent SIGINT before the process had installed its handlers, and the
 * default action ended it (exit code null instead of 0). Run in-process: what is checked is that
 * the handlers are there when the line is written, which no scheduling can hide.
 */
describe('a readiness line is printed with the stop handlers installed', () => {
  let redis: TestRedis;
  const saved = { url: process.env.REDIS_URL, prefix: process.env.ROLLOUT_QUEUE_PREFIX };

  beforeAll(async () => {
    redis = await startRedis();
    process.env.REDIS_URL = redis.url;
    process.env.ROLLOUT_QUEUE_PREFIX = uniquePrefix('ready');
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });
  afterAll(async () => {
    for (const [name, value] of [['REDIS_URL', saved.url], ['ROLLOUT_QUEUE_PREFIX', saved.prefix]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await redis.stop();
  });

  /** Runs `action` until its readiness line (`ready`), then sends SIGINT the way a reader of that line would. */
  async function stopAtReadyLine(ready: RegExp, action: () => Promise<number>): Promise<{ handlersAtReady: number; code: number }> {
    const before = process.listenerCount('SIGINT');
    let handlersAtReady = -1;
    const write = process.stdout.write.bind(process.stdout);
    vi.spyOn(process.stdout, 'write').mockImplementation(((chunk: string | Uint8Array, ...rest: unknown[]) => {
      if (handlersAtReady < 0 && ready.test(String(chunk))) {
        handlersAtReady = process.listenerCount('SIGINT') - before;
        // What the reader does on the line: Node runs the listeners of a real SIGINT the same way.
        queueMicrotask(() => process.emit('SIGINT', 'SIGINT'));
      }
      return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof process.stdout.write);
    const code = await action();
    return { handlersAtReady, code };
  }

  it('dashboard', async () => {
    const options = dashboardCommand().parse(['--port', '0'], { from: 'user' }).opts();
    const { handlersAtReady, code } = await stopAtReadyLine(/dashboard: http/, () => dashboardAction(options));
    expect(handlersAtReady).toBe(1);
    expect(code).toBe(0);
  });

  it('gateway', async () => {
    const options = gatewayCommand().parse(['--port', '0', '--no-auth'], { from: 'user' }).opts();
    const { handlersAtReady, code } = await stopAtReadyLine(/gateway: http/, () => gatewayAction(options));
    expect(handlersAtReady).toBe(1);
    expect(code).toBe(0);
  });
});
