import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../helpers/chromium.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';
import { REPO_ROOT, startCli, uniquePrefix, waitFor, type CliProcess } from '../cli/cli-process.js';

// Issue 31: a runs view beside bull-board, watched in headless Debian Chromium while a real run
// (real workers, a real `run`) goes on. Screenshots go to a temp dir, or to docs/ (the ones
// docs/dashboard.md shows) with RQ_UPDATE_SCREENSHOTS=1.
const TASKS = 36;
const queue = 'runs-view';
const TOKEN = 'runs-view-token-0123456789';
let redis: TestRedis;
let dir: string;
let env: Record<string, string>;
let workers: CliProcess[] = [];
let dashboard: CliProcess;
let url: string;
let browser: Browser;
const shots = process.env.RQ_UPDATE_SCREENSHOTS === '1' ? path.join(REPO_ROOT, 'docs') : '';

beforeAll(async () => {
  browser = await launchChromium();
  redis = await startRedis();
  dir = await mkdtemp(path.join(os.tmpdir(), 'rq-runs-view-'));
  env = { REDIS_URL: redis.url, ROLLOUT_QUEUE_PREFIX: uniquePrefix('rv'), LOG_LEVEL: 'warn' };
  // Every 6th task exits 1 (model / NonZeroExit), every 9th times out (model / RunTimeout),
  // every 4th answers wrong (ok, reward 0); each takes a moment, so the run is watched live.
  const lines = Array.from({ length: TASKS }, (_, i) => JSON.stringify({ id: `t${String(i + 1).padStart(2, '0')}`, n: i + 1, answer: String(i + 1) }));
  await writeFile(path.join(dir, 'tasks.jsonl'), `${lines.join('\n')}\n`);
  await writeFile(path.join(dir, 'solve.js'), [
    "let input = '';",
    "process.stdin.on('data', (c) => (input += c));",
    "process.stdin.on('end', () => {",
    '  const { n } = JSON.parse(input);',
    '  if (n % 9 === 0) return setTimeout(() => {}, 60_000);',
    '  setTimeout(() => { if (n % 6 === 0) process.exit(1); console.log(n % 4 === 0 ? "wrong" : String(n)); }, 250);',
    '});',
  ].join('\n'));
  workers = ['rv-w1', 'rv-w2'].map((name) => startCli(['worker', '--queue', queue, '--concurrency', '2', '--name', name], { env }));
  dashboard = startCli(['dashboard', '--port', '0'], { env: { ...env, ROLLOUT_QUEUE_DASHBOARD_TOKEN: TOKEN } });
  await waitFor(() => /dashboard: (http:\S+)/.test(dashboard.stdout()), 60_000, `the dashboard URL; it printed ${dashboard.stdout()}${dashboard.stderr()}`);
  url = (/dashboard: (http:\S+)/.exec(dashboard.stdout())?.[1] ?? '').replace(/\/$/, '');
});

afterAll(async () => {
  await browser?.close();
  dashboard?.child.kill('SIGTERM');
  for (const worker of workers) worker.child.kill('SIGTERM');
  await Promise.all([dashboard?.done, ...workers.map((worker) => worker.done)]);
  await rm(dir, { recursive: true, force: true });
  await redis?.stop();
});

async function loggedIn(): Promise<Page> {
  const context = await browser.newContext({ httpCredentials: { username: 'viewer', password: TOKEN }, viewport: { width: 1280, height: 900 } });
  return context.newPage();
}

const rowText = (page: Page, runId: string): Promise<string> => page.locator(`tr[data-run="${runId}"]`).innerText();

describe('the runs view', () => {
  it('lists a live run and reloads itself until it completes; its page shows kinds by error type, rewards, throughput, workers, counters, cost', async () => {
    const run = startCli([
      'run', '--tasks', path.join(dir, 'tasks.jsonl'), '--artifact', path.join(dir, 'solve.js'), '--run', 'rollout-queue/runners:codeRunner',
      '--run-config', '{"timeoutMs":1500}', '--reward', 'rollout-queue/rewards:exactMatch', '--queue', queue, '--run-id', 'live1', '--out', path.join(dir, 'live1.jsonl'),
    ], { env, cwd: dir });
    const page = await loggedIn();
    await waitFor(async () => (await page.goto(`${url}/runs`))?.status() === 200 && (await page.locator('tr[data-run="live1"]').count()) === 1, 60_000, 'run live1 in the runs list');
    const seen: string[] = [await rowText(page, 'live1')];
    expect(seen[0]).toMatch(/^runs-view\tlive1\trunning\t/);
    // No navigation of ours from here: the page reloads itself (meta refresh) while the run runs.
    let liveShot = false;
    while (!/\tcompleted\t/.test(seen.at(-1) as string)) {
      await page.waitForEvent('load', { timeout: 120_000 });
      seen.push(await rowText(page, 'live1'));
      if (shots && !liveShot && /\trunning\t\s*[1-9]/.test(seen.at(-1) as string)) {
        // The docs' live pictures: the list mid-run, and the run's own page beside it.
        liveShot = true;
        await page.screenshot({ path: path.join(shots, 'dashboard-runs-live.png') });
        const detail = await page.context().newPage();
        await detail.goto(`${url}/runs/${queue}/live1`);
        await detail.screenshot({ path: path.join(shots, 'dashboard-run-live.png'), fullPage: true });
        await detail.close();
      }
    }
    expect(seen.length).toBeGreaterThan(1);
    expect(seen.at(-1)).toMatch(/^runs-view\tlive1\tcompleted\t\s*36 \/ 36 \(100%\)\t\d+s\t[\d.]+\/(s|min)\t28\t8\t0\t0$/);
    expect((await run.done).code).toBe(0);

    await page.click('a[href="/runs/runs-view/live1"]');
    const kinds = await page.locator('#kinds').innerText();
    // model: n % 6 (6, 12, 24, 30: NonZeroExit) and n % 9 (9, 18, 27, 36: RunTimeout).
    expect(kinds).toMatch(/ok\t28/);
    expect(kinds).toMatch(/model\t8\tNonZeroExit 4, RunTimeout 4/);
    expect((await page.locator('#progress').innerText()).replace(/\s+/g, ' ')).toContain('finished 36 / 36 (100%) delivered 36 / 36 (100%) enqueued 36 of 36');
    // Of the 28 ok, 4, 8, 16, 20, 28 and 32 answered wrong: 22 of 28 score 1.
    expect(await page.locator('#reward-mean').innerText()).toBe('28 reward(s), mean 0.786');
    expect(await page.locator('#rewards rect').count()).toBe(10);
    expect(await page.locator('#throughput rect').count()).toBe(30);
    const workerRows = await page.locator('#workers').innerText();
    expect(workerRows).toMatch(/rv-w1\t\d+/);
    expect(workerRows).toMatch(/rv-w2\t\d+/);
    expect(await page.locator('#counters').innerText()).toMatch(/redispatched\t0\nduplicates dropped\t0\nquarantined\t0/);
    expect(await page.locator('#cost').innerText()).toBe('unknown (no receipts)');
    const shot = await page.screenshot({ path: path.join(shots || dir, 'dashboard-run.png'), fullPage: true });
    expect(shot.subarray(1, 4).toString()).toBe('PNG');
    await page.goto(`${url}/runs`);
    await page.screenshot({ path: path.join(shots || dir, 'dashboard-runs.png') });
    // A completed run's page does not reload itself.
    expect(await page.locator('meta[http-equiv="refresh"]').count()).toBe(0);
  });

  it('bull-board links to it; the same login as the dashboard; read-only; an unknown run is a 404', async () => {
    expect((await fetch(`${url}/runs`)).status).toBe(401);
    expect((await fetch(`${url}/api/runs`)).status).toBe(401);
    const auth = { authorization: `Bearer ${TOKEN}` };
    const api = (await (await fetch(`${url}/api/runs`, { headers: auth })).json()) as Array<{ runId: string; queue: string; status: string; coordinatorNote?: unknown }>;
    expect(api.find((row) => row.runId === 'live1')).toMatchObject({ queue, status: 'completed' });
    expect(api.every((row) => row.coordinatorNote === undefined)).toBe(true);
    expect((await fetch(`${url}/runs`, { method: 'POST', headers: auth })).status).toBeGreaterThanOrEqual(400);
    expect((await fetch(`${url}/runs/${queue}/nope`, { headers: auth })).status).toBe(404);
    expect((await fetch(`${url}/runs/bad:queue/x`, { headers: auth })).status).toBe(400);
    // bull-board's page carries the link to the runs view in its UI config (its header menu).
    const page = await loggedIn();
    await page.goto(`${url}/`);
    expect(await page.title()).toBe('rollout-queue');
    expect(await page.content()).toContain('"miscLinks":[{"text":"Runs","url":"/runs"}]');
  });
});
