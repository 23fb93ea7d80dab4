/** Live progress of a run: the plain line off a terminal and the pieces of the terminal bar. */
export const PROGRESS_MSG = {
  /** A plain progress line (stderr off a terminal): `progress: 12/40 results (30%), 2.5/s, ETA 11s; ok 10, model 2, infra 0, caller 0`. */
  progressLine: (done: number, total: number | null, pace: { perSecond: number | null; etaSeconds: number | null }, kinds: Readonly<Record<string, number>>) =>
    `progress: ${total ? `${done}/${total} results (${Math.floor((done / total) * 100)}%)` : `${done} results`}, ${PROGRESS_MSG.progressRate(pace.perSecond)}` +
    `${total ? `, ETA ${PROGRESS_MSG.progressEta(pace.etaSeconds)}` : ''}; ${PROGRESS_MSG.progressKinds(kinds, ', ')}`,
  /** cli-progress format of the terminal bar; `{rate}`, `{etaLeft}` and `{kinds}` are filled by progress.ts. */
  progressBarFormat: ' {bar} {percentage}% | {value}/{total} results | {rate} | ETA {etaLeft} | {kinds}',
  /** Results per second as `2.5/s`, `40/min` below one a second, `-/s` before the first. */
  progressRate: (perSecond: number | null) =>
    perSecond === null ? '-/s' : perSecond >= 1 ? `${perSecond >= 10 ? Math.round(perSecond) : perSecond.toFixed(1)}/s` : `${(perSecond * 60).toFixed(perSecond * 60 >= 10 ? 0 : 1)}/min`,
  /** Seconds left as `45s`, `12m 05s`, `2h 03m`, `-` when unknown. */
  progressEta: (seconds: number | null) => {
    if (seconds === null || !Number.isFinite(seconds)) return '-';
    const s = Math.round(seconds);
    if (s < 60) return `${s}s`;
    if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
    return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  },
  /** Counts by kind for progress, `ok 10 model 2 infra 0 caller 0` (infrastructure shortened to fit a terminal line). */
  progressKinds: (kinds: Readonly<Record<string, number>>, separator = ' ') =>
    (['ok', 'model', 'infrastructure', 'caller'] as const).map((kind) => `${kind === 'infrastructure' ? 'infra' : kind} ${kinds[kind] ?? 0}`).join(separator),
} as const;
