import express, { type Router } from 'express';
import type { Redis } from 'ioredis';
import { queueKeys } from '../lease/index.js';
import { publicText } from './public-text.js';
import { readRunDetail } from './run-detail.js';
import { listRuns } from './run-list.js';
import { escapeHtml, runDetailPage, runsListPage } from './runs-html.js';

/** What the runs view reads: the dashboard's Redis connection, prefix and the queues it shows now. */
export interface RunsViewSource {
  readonly redis: Redis;
  readonly prefix: string;
  /** The queues to list runs of (the dashboard's, discovered again as it does for bull-board). */
  queues(): Promise<readonly string[]>;
}

/**
 * The runs view beside bull-board, GET only (read-only whatever `--writable` says; the login
 * middleware in front of it is the dashboard's own):
 * - `/runs`: every run of the shown queues, `/runs/<queue>/<runId>`: one run (HTML, reloading
 *   itself while the run is running);
 * - `/api/runs`, `/api/runs/<queue>/<runId>`: the same as JSON.
 * A queue name that cannot be one is a 400, a run the queue does not have a 404; other failures
 * answer 500 with public text only (no paths, no Redis address).
 */
export function runsRouter(source: RunsViewSource): Router {
  const router = express.Router();
  router.get(['/runs', '/runs/'], async (_req, res) => {
    try {
      res.type('html').send(runsListPage(await listRuns(source.redis, source.prefix, await source.queues())));
    } catch (err) {
      failed(res, err);
    }
  });
  router.get('/api/runs', async (_req, res) => {
    try {
      const rows = await listRuns(source.redis, source.prefix, await source.queues());
      res.json(rows.map(({ queue, record, ageMs, perSecond }) => ({ queue, ...publicRecord(record), ageMs, perSecond })));
    } catch (err) {
      failed(res, err);
    }
  });
  const detail = (as: 'html' | 'json') => async (req: express.Request, res: express.Response) => {
    const queue = String(req.params.queue);
    const runId = String(req.params.runId);
    try {
      queueKeys(source.prefix, queue);
    } catch {
      res.status(400).type('text/plain').send(`no such queue name: ${queue}\n`);
      return;
    }
    try {
      const found = await readRunDetail(source.redis, source.prefix, queue, runId);
      if (!found) {
        res.status(404);
        if (as === 'json') res.json({ error: `no run "${runId}" on queue "${queue}"` });
        else res.type('html').send(`<!doctype html><p>No run <code>${escapeHtml(runId)}</code> on queue <code>${escapeHtml(queue)}</code> (purged, or past its retention). <a href="/runs">All runs</a></p>`);
        return;
      }
      if (as === 'json') res.json({ ...found, record: publicRecord(found.record) });
      else res.type('html').send(runDetailPage(found));
    } catch (err) {
      failed(res, err);
    }
  };
  router.get('/runs/:queue/:runId', detail('html'));
  router.get('/api/runs/:queue/:runId', detail('json'));
  return router;
}

/** A run record as the view shows it: its coordinator's note (an absolute results file path on some host) left out. */
function publicRecord<T extends { coordinatorNote: string | null }>(record: T): Omit<T, 'coordinatorNote'> {
  const { coordinatorNote: _note, ...rest } = record;
  return rest;
}

function failed(res: express.Response, err: unknown): void {
  res.status(500).json({ error: 'runs view request failed', message: publicText((err as Error)?.message) });
}
