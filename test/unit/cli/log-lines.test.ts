import { describe, expect, it } from 'vitest';
import { formatLogLine } from '../../../src/cli/log-lines.js';

describe('formatLogLine', () => {
  // The exact line a second `run` of a run another coordinator holds printed (fresh-user report).
  it('turns a pino JSON line into one line of text with its fields', () => {
    const line = '{"level":40,"time":1796399804753,"pid":4242,"component":"coordinator","runId":"k1","holder":{"pid":77,"host":"box"},"msg":"another coordinator holds this run; waiting for its lease to expire (it may have been killed)"}\n';
    expect(formatLogLine(line)).toBe('warn: another coordinator holds this run; waiting for its lease to expire (it may have been killed) (runId=k1, holder={"pid":77,"host":"box"})\n');
  });

  it('names an error by its message, and a line without fields has no parentheses', () => {
    expect(formatLogLine('{"level":50,"time":1,"pid":1,"err":{"type":"Error","message":"boom","stack":"Error: boom\\n at x"},"msg":"enqueue failed"}')).toBe('error: enqueue failed (err=boom)\n');
    expect(formatLogLine('{"level":30,"time":1,"pid":1,"msg":"ready"}')).toBe('info: ready\n');
  });

  it('passes a line that is not JSON as it is', () => {
    expect(formatLogLine('plain words')).toBe('plain words\n');
  });
});
