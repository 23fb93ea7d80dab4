import { describe, expect, it } from 'vitest';
import { compileGatewayOptions, DEFAULT_MAX_BODY_BYTES, isLoopbackHost } from '../../../src/gateway/index.js';

const base = { redisUrl: 'redis://127.0.0.1:6379', port: 0, dispatch: { $ref: 'x:y', config: {} } };

describe('gateway options', () => {
  it('defaults the queue, host and the 10 MiB body limit', () => {
    expect(compileGatewayOptions({ ...base, noAuth: true })).toMatchObject({ queue: 'rollouts', host: '127.0.0.1', maxBodyBytes: DEFAULT_MAX_BODY_BYTES });
    expect(DEFAULT_MAX_BODY_BYTES).toBe(10 * 1024 * 1024);
  });

  it('requires a token, or noAuth on loopback only', () => {
    expect(() => compileGatewayOptions(base)).toThrow(/authToken: a bearer token is required/);
    expect(() => compileGatewayOptions({ ...base, noAuth: true, host: '0.0.0.0' })).toThrow(/noAuth: refused on host "0.0.0.0"/);
    expect(() => compileGatewayOptions({ ...base, noAuth: true, authToken: 'x'.repeat(16) })).toThrow(/not both/);
    expect(() => compileGatewayOptions({ ...base, authToken: 'short' })).toThrow(/at least 16 characters/);
    expect(compileGatewayOptions({ ...base, authToken: 'x'.repeat(16), host: '0.0.0.0' }).host).toBe('0.0.0.0');
  });

  it('secrets by name, a per-dispatch time limit and a shutdown grace period: checked, named in the error', () => {
    expect(compileGatewayOptions({ ...base, noAuth: true })).toMatchObject({ env: [], graceMs: 30_000 });
    expect(compileGatewayOptions({ ...base, noAuth: true, env: ['OPENAI_API_KEY'], runMs: 5000, graceMs: 0 })).toMatchObject({ env: ['OPENAI_API_KEY'], runMs: 5000, graceMs: 0 });
    expect(() => compileGatewayOptions({ ...base, noAuth: true, env: ['sk-live-123'] })).toThrow(/^gateway option env\.0: sandbox\.env lists variable NAMES/);
    expect(() => compileGatewayOptions({ ...base, noAuth: true, runMs: 0 })).toThrow(/^gateway option runMs:/);
    expect(() => compileGatewayOptions({ ...base, noAuth: true, graceMs: -1 })).toThrow(/^gateway option graceMs:/);
  });

  it('knows loopback addresses', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1']) expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ['0.0.0.0', '::', '10.0.0.1', '128.0.0.1', 'example.com']) expect(isLoopbackHost(host), host).toBe(false);
  });
});
