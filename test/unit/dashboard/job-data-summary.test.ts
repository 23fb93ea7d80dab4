import { describe, expect, it } from 'vitest';
import { summarizeJobData, summarizeRendered } from '../../../src/dashboard/job-data-summary.js';

// The exact reported pointer: a 5917-byte artifact stored once per run in Redis.
const SHA256 = 'b18ac9' + '0123456789abcdef'.repeat(4).slice(0, 58);
const STORED = { sha256: SHA256, bytes: 5917 };

describe('summarizeRendered: what the dashboard shows of a job\'s artifact', () => {
  it('describes a stored artifact reference by the artifact\'s size and short hash, not the reference\'s own JSON size', () => {
    expect(SHA256).toMatch(/^[0-9a-f]{64}$/);
    const data = { v: 1, leaseId: 'l1', runId: 'r1', task: { id: 't1' }, rendered: STORED };
    const summary = summarizeJobData(data) as { rendered: Record<string, unknown> };
    expect(summary.rendered).toEqual({
      kind: 'stored',
      bytes: 5917,
      sha256: 'b18ac9012345…',
      note: "the artifact's JSON text (a string in quotes, or its files) is stored once per run in Redis; bytes and sha256 are of that text",
    });
  });

  it('keeps a malformed reference as unknown (the schema is the allowlist)', () => {
    expect(summarizeRendered({ sha256: 'B18AC9', bytes: 5917 })).toEqual({ kind: 'unknown', bytes: expect.any(Number) });
    expect(summarizeRendered({ ...STORED, extra: 'x' })).toMatchObject({ kind: 'unknown' });
  });

  it('keeps strings as their length and files as their list and size', () => {
    expect(summarizeRendered('x'.repeat(196))).toEqual({ kind: 'string', chars: 196 });
    expect(summarizeRendered({ files: { 'main.py': 'print(1)', 'lib/a.py': '' } })).toEqual({
      kind: 'files',
      files: ['main.py', 'lib/a.py'],
      count: 2,
      bytes: Buffer.byteLength(JSON.stringify({ 'main.py': 'print(1)', 'lib/a.py': '' })),
    });
  });
});
