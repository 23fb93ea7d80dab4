import type { CostSummary } from '../spec/index.js';
import type { RunDetail } from './run-detail.js';
import type { RunRow } from './run-list.js';

/**
 * The runs view's HTML, rendered on the server (no front-end build, no script): a list of runs
 * and a page per run. A page showing a running run reloads itself every
 * {@link REFRESH_SECONDS} s (`<meta http-equiv="refresh">`), so a live run is watched by
 * leaving it open. Every value from Redis is HTML-escaped.
 */

/** Seconds between reloads of a page that shows a running run. */
export const REFRESH_SECONDS = 2;

const KIND_COLOUR: Readonly<Record<string, string>> = { ok: '#2e7d32', model: '#c62828', infrastructure: '#ef6c00', caller: '#6a1b9a' };

/** `text` safe inside HTML text and attribute values. */
export function escapeHtml(text: unknown): string {
  return String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

/** A duration in ms as `45s`, `12m 05s`, `3h 04m`, `2d 03h`. */
export function formatAge(ms: number | null): string {
  if (ms === null) return '-';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86_400)}d ${String(Math.floor((s % 86_400) / 3600)).padStart(2, '0')}h`;
}

/** Results a second as `8.3/s`, or a minute below one a second, `-` when unknown. */
export function formatRate(perSecond: number | null): string {
  if (perSecond === null) return '-';
  return perSecond >= 1 ? `${perSecond.toFixed(1)}/s` : `${(perSecond * 60).toFixed(1)}/min`;
}

function page(title: string, body: string, refresh: boolean): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)} · rollout-queue</title>
${refresh ? `<meta http-equiv="refresh" content="${REFRESH_SECONDS}">` : ''}
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1b1b;background:#fafafa}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}
nav a{margin-right:16px}table{border-collapse:collapse;background:#fff}
th,td{border:1px solid #ddd;padding:4px 10px;text-align:left;vertical-align:top}th{background:#f0f0f0}
td.n{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#666}
.bar{background:#e0e0e0;width:160px;height:10px;display:inline-block;vertical-align:middle}
.bar span{background:#1565c0;height:10px;display:block}
.grid{display:flex;flex-wrap:wrap;gap:24px}.card{background:#fff;border:1px solid #ddd;padding:12px 16px}
.status-running{color:#1565c0}.status-completed{color:#2e7d32}.status-stopped,.status-cancelled{color:#c62828}
code{font:12px ui-monospace,monospace}
</style></head><body>
<nav><a href="/">Queues (bull-board)</a><a href="/runs">Runs</a>${refresh ? `<span class="muted">live: reloads every ${REFRESH_SECONDS} s</span>` : ''}</nav>
${body}
</body></html>`;
}

function progressCell(done: number, total: number | null): string {
  const share = total ? Math.min(1, done / total) : 0;
  return `<span class="bar"><span style="width:${(share * 100).toFixed(1)}%"></span></span> ${done}${total === null ? '' : ` / ${total}`}${total ? ` (${Math.floor(share * 100)}%)` : ''}`;
}

function runHref(queue: string, runId: string): string {
  return `/runs/${encodeURIComponent(queue)}/${encodeURIComponent(runId)}`;
}

/** The runs list: queue, run, state, progress (delivered of specs), age, delivery rate, counts by kind. */
export function runsListPage(rows: readonly RunRow[]): string {
  const body = rows.length === 0
    ? '<p class="muted">No runs on these queues yet (runs past their retention are gone).</p>'
    : `<table id="runs"><thead><tr><th>queue</th><th>run</th><th>state</th><th>progress (delivered)</th><th>age</th><th>rate</th><th>ok</th><th>model</th><th>infra</th><th>caller</th></tr></thead><tbody>
${rows.map(({ queue, record, ageMs, perSecond }) => `<tr data-run="${escapeHtml(record.runId)}"><td>${escapeHtml(queue)}</td><td><a href="${escapeHtml(runHref(queue, record.runId))}">${escapeHtml(record.runId)}</a></td>` +
  `<td class="status-${escapeHtml(record.status)}">${escapeHtml(record.status)}</td><td>${progressCell(record.delivered, record.specCount)}</td>` +
  `<td class="n">${formatAge(ageMs)}</td><td class="n">${formatRate(perSecond)}</td>` +
  `${(['ok', 'model', 'infrastructure', 'caller'] as const).map((kind) => `<td class="n">${record.kinds[kind]}</td>`).join('')}</tr>`).join('\n')}
</tbody></table>`;
  return page('Runs', `<h1>Runs</h1>${body}`, rows.some((row) => row.record.status === 'running'));
}

/** Vertical bars as inline SVG: `counts`, with a label under the first and last bar. */
function barChart(id: string, counts: readonly number[], colour: string, firstLabel: string, lastLabel: string): string {
  const width = 360;
  const height = 120;
  const max = Math.max(1, ...counts);
  const step = width / Math.max(1, counts.length);
  const bars = counts.map((count, i) => {
    const h = Math.round((count / max) * (height - 16));
    return `<rect x="${(i * step + 1).toFixed(1)}" y="${height - 14 - h}" width="${Math.max(1, step - 2).toFixed(1)}" height="${h}" fill="${colour}"><title>${count}</title></rect>`;
  });
  return `<svg id="${id}" width="${width}" height="${height}" role="img"><text x="0" y="${height - 2}" font-size="10">${escapeHtml(firstLabel)}</text>` +
    `<text x="${width}" y="${height - 2}" font-size="10" text-anchor="end">${escapeHtml(lastLabel)}</text><text x="0" y="10" font-size="10">max ${max}</text>${bars.join('')}</svg>`;
}

function costText(cost: CostSummary): string {
  if (cost.totalUsd === null) return 'unknown (no receipts)';
  const labels = Object.entries(cost.byLabel).map(([label, v]) => `${escapeHtml(label)} $${v.usd.toFixed(4)} (${v.receipts})`).join(', ');
  return `$${cost.totalUsd.toFixed(4)} (${cost.receipts} receipt${cost.receipts === 1 ? '' : 's'})${labels ? `; per model: ${labels}` : ''}`;
}

/** One run's page: progress, counts by kind and error type, reward histogram, throughput, workers, counters with forensics, cost. */
export function runDetailPage(detail: RunDetail): string {
  const { record, kinds, errorTypes } = detail;
  const total = record.specCount;
  const kindRows = (['ok', 'model', 'infrastructure', 'caller'] as const).map((kind) =>
    `<tr data-kind="${kind}"><td style="color:${KIND_COLOUR[kind]}">${kind}</td><td class="n">${kinds[kind]}</td><td>${errorTypes[kind].map(([type, count]) => `${escapeHtml(type)} ${count}`).join(', ')}</td></tr>`).join('');
  const { rewards, throughput } = detail;
  const bucketS = throughput.bucketMs / 1000;
  const quarantine = detail.quarantined.length === 0
    ? '<p class="muted">none</p>'
    : `<table id="quarantined"><tr><th>lease</th><th>reason</th><th>exit code</th><th>signal</th><th>stderr tail</th></tr>${detail.quarantined.map((q) =>
      `<tr><td><code>${escapeHtml(q.leaseId)}</code></td><td>${escapeHtml(q.reason)}</td><td>${escapeHtml(q.exitCode)}</td><td>${escapeHtml(q.signal)}</td><td><code>${escapeHtml(q.stderrTail)}</code></td></tr>`).join('')}</table>`;
  const body = `<h1>Run <code>${escapeHtml(record.runId)}</code> <span class="status-${escapeHtml(record.status)}">${escapeHtml(record.status)}</span></h1>
<p class="muted">queue <a href="/queue/${encodeURIComponent(detail.queue)}">${escapeHtml(detail.queue)}</a> · created ${escapeHtml(record.createdAt ?? '-')}${record.endedAt ? ` · delivered in full ${escapeHtml(record.endedAt)}` : ''}${record.stopReason ? ` · stop reason: ${escapeHtml(record.stopReason)}` : ''}</p>
<div class="grid">
<div class="card" id="progress"><h2>Progress</h2><p>finished ${progressCell(detail.finished, total)}</p><p>delivered ${progressCell(record.delivered, total)}</p><p>enqueued ${record.enqueued}${total === null ? '' : ` of ${total}`}</p>${detail.leases.read < detail.leases.total ? `<p class="muted">counts below cover the first ${detail.leases.read} of ${detail.leases.total} leases</p>` : ''}</div>
<div class="card"><h2>Results by kind and error type</h2><table id="kinds"><tr><th>kind</th><th>count</th><th>error types</th></tr>${kindRows}</table></div>
<div class="card"><h2>Reward histogram (ok)</h2>${barChart('rewards', rewards.bins, '#2e7d32', String(rewards.min), String(rewards.max))}<p id="reward-mean">${rewards.count} reward(s)${rewards.mean === null ? '' : `, mean ${rewards.mean.toFixed(3)}`}</p></div>
<div class="card"><h2>Throughput</h2>${barChart('throughput', throughput.counts, '#1565c0', '0 s', formatAge(throughput.bucketMs * throughput.counts.length))}<p>finished leases per ${bucketS < 10 ? bucketS.toFixed(1) : Math.round(bucketS)} s since the run was created</p></div>
<div class="card"><h2>Per worker</h2><table id="workers"><tr><th>worker</th><th>results</th></tr>${detail.workers.map(([name, count]) => `<tr><td>${escapeHtml(name)}</td><td class="n">${count}</td></tr>`).join('') || '<tr><td colspan="2" class="muted">none yet</td></tr>'}</table></div>
<div class="card"><h2>Recovery</h2><table id="counters"><tr><td>redispatched</td><td class="n">${record.redispatched}</td></tr><tr><td>duplicates dropped</td><td class="n">${record.duplicatesDropped}</td></tr><tr><td>quarantined</td><td class="n">${detail.quarantined.length}</td></tr><tr><td>truncated output</td><td class="n">${record.truncated}</td></tr></table></div>
<div class="card"><h2>Cost</h2><p id="cost">${costText(detail.cost)}</p></div>
</div>
<h2>Quarantined leases (ended by the re-dispatch limit)</h2>${quarantine}`;
  return page(`Run ${record.runId}`, body, record.status === 'running');
}
