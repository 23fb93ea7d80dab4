import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { classifyError } from '../../../src/consumer/classify.js';
import { CallerError, InfrastructureError, ModelError } from '../../../src/spec/index.js';
import { freePort } from '../../helpers/redis.js';

class JudgeDown extends InfrastructureError {}
class BadGold extends CallerError {}

describe('classifyError (by what happened, through cause chains)', () => {
  it('a real fetch to a closed port is infrastructure, with the cause in the message', async () => {
    const port = await freePort();
    const err = await fetch(`http://127.0.0.1:${port}/`).then(() => undefined, (e: unknown) => e);
    const classified = classifyError(err);
    expect(classified.kind).toBe('infrastructure');
    expect(classified.error.type).toBe('ECONNREFUSED');
    expect(classified.error.message).toBe(`fetch failed: connect ECONNREFUSED 127.0.0.1:${port}`);
  });

  it('a connection reset by a real server is infrastructure', async () => {
    const server = http.createServer((req) => req.socket.destroy());
    const port = await freePort();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    try {
      const err = await fetch(`http://127.0.0.1:${port}/`).then(() => undefined, (e: unknown) => e);
      expect(classifyError(err).kind).toBe('infrastructure');
    } finally {
      server.close();
    }
  });

  it.each([
    ['HTTP 503 on the error', Object.assign(new Error('judge answered 503'), { status: 503 }), 'HTTP503'],
    ['HTTP 429 as statusCode', Object.assign(new Error('slow down'), { statusCode: 429 }), 'HTTP429'],
    ['HTTP 408 in response.status', Object.assign(new Error('timeout'), { response: { status: 408 } }), 'HTTP408'],
    ['DNS failure deep in the chain', new Error('judge call failed', { cause: new Error('lookup', { cause: Object.assign(new Error('getaddrinfo ENOTFOUND judge'), { code: 'ENOTFOUND' }) }) }), 'ENOTFOUND'],
    ['an AggregateError of refused addresses', new TypeError('fetch failed', { cause: Object.assign(new AggregateError([Object.assign(new Error('connect ECONNREFUSED ::1:80'), { code: 'ECONNREFUSED' })], ''), { code: 'ECONNREFUSED' }) }), 'ECONNREFUSED'],
    ['a subclass of InfrastructureError', new JudgeDown('judge is down'), 'JudgeDown'],
    ['an InfrastructureError as the cause', new Error('wrapped', { cause: new InfrastructureError('no GPU') }), 'Error'],
  ])('%s → infrastructure', (_label, err, type) => {
    expect(classifyError(err)).toMatchObject({ kind: 'infrastructure', error: { type } });
  });

  it.each([
    ['HTTP 400 (the request is wrong, retrying will not help)', Object.assign(new Error('bad request'), { status: 400 }), 'model'],
    ['HTTP 404', Object.assign(new Error('no such route'), { status: 404 }), 'model'],
    ['a plain TypeError', new TypeError('x is undefined'), 'model'],
    ['a ModelError wrapping a refused connection (the brand decides)', new ModelError('BadOutput', 'bad', { cause: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }) }), 'model'],
    ['a CallerError subclass', new BadGold('no gold'), 'caller'],
  ])('%s → %s', (_label, err, kind) => {
    expect(classifyError(err).kind).toBe(kind);
  });

  it('a cycle in cause does not loop', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(classifyError(a)).toMatchObject({ kind: 'model', error: { message: 'a: b' } });
  });
});
