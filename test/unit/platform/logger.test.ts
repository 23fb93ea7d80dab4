import { describe, expect, it } from 'vitest';
import { childLogger, createLogger } from '../../../src/platform/logger.js';

function capture(): { lines: string[]; stream: { write: (line: string) => boolean } } {
  const lines: string[] = [];
  return { lines, stream: { write: (line: string) => (lines.push(line), true) } };
}

describe('createLogger redaction', () => {
  it('censors secret-looking keys at the top level and two levels down', () => {
    const { lines, stream } = capture();
    const logger = createLogger({ component: 'test' }, stream);
    logger.info({ password: 'pw-1', token: 'tok-2', apiKey: 'key-3', spec: { sandbox: { secrets: { A: 'val-4' } } }, job: { env: { B: 'val-5' } }, leaseId: 'r.t' }, 'hello');
    const text = lines.join('');
    for (const value of ['pw-1', 'tok-2', 'key-3', 'val-4', 'val-5']) expect(text).not.toContain(value);
    expect(text).toContain('[redacted]');
    expect(JSON.parse(lines[0] as string)).toMatchObject({ leaseId: 'r.t', msg: 'hello', component: 'test' });
  });

  it('keeps ordinary fields', () => {
    const { lines, stream } = capture();
    createLogger({}, stream).warn({ runId: 'r', kind: 'model' }, 'x');
    expect(JSON.parse(lines[0] as string)).toMatchObject({ runId: 'r', kind: 'model', level: 40 });
  });
});

describe('childLogger', () => {
  it('writes a key the parent binds already once (fresh-user report: "queue" twice in every worker line)', () => {
    const { lines, stream } = capture();
    const cli = createLogger({ component: 'worker', queue: 'rollouts' }, stream);
    childLogger(cli, { worker: 'w1', queue: 'rollouts' }).info('ready');
    expect(lines[0]?.match(/"queue"/g)).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toMatchObject({ component: 'worker', queue: 'rollouts', worker: 'w1' });
  });

  it('binds a value that differs from the parent\'s (the last one wins, as in pino)', () => {
    const { lines, stream } = capture();
    childLogger(createLogger({ queue: 'a' }, stream), { queue: 'b' }).info('x');
    expect(JSON.parse(lines[0] as string)).toMatchObject({ queue: 'b' });
  });
});
