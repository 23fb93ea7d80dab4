import { describe, expect, it } from 'vitest';
import { findVersionSkew } from '../../../src/consumer/version-skew.js';
import { RolloutSpecSchema } from '../../../src/spec/index.js';

const base = { v: 1, leaseId: 'r.t', runId: 'r', runAttemptId: 'a1', rendered: 'x', task: { id: 't' }, run: { $ref: 'a/b:run', config: {} }, reward: { $ref: 'a/b:reward', config: {} } };

describe('findVersionSkew', () => {
  it('is null without requires or when every range is satisfied', () => {
    expect(findVersionSkew(undefined)).toBeNull();
    expect(findVersionSkew({ 'rollout-queue': '>=0.1.0 <1.0.0', semver: '^7.0.0' })).toBeNull();
  });

  it('names the package, range and installed version outside the range, or null when not installed', () => {
    expect(findVersionSkew({ 'rollout-queue': '>=99' })).toEqual({ package: 'rollout-queue', range: '>=99', installed: '0.1.0' });
    expect(findVersionSkew({ semver: '^6.0.0' })).toMatchObject({ package: 'semver', range: '^6.0.0', installed: expect.stringMatching(/^7\./) });
    expect(findVersionSkew({ 'no-such-package-rq': '*' })).toEqual({ package: 'no-such-package-rq', range: '*', installed: null });
  });
});

describe('sandbox.requires in the spec', () => {
  it('accepts package name → semver range', () => {
    const spec = RolloutSpecSchema.parse({ ...base, sandbox: { requires: { 'rollout-queue': '>=0.1.0 <0.2.0', '@scope/pkg': '^1.2.0' } } });
    expect(spec.sandbox.requires).toEqual({ 'rollout-queue': '>=0.1.0 <0.2.0', '@scope/pkg': '^1.2.0' });
  });

  it('rejects a value that is not a semver range, naming the field and the form', () => {
    const parsed = RolloutSpecSchema.safeParse({ ...base, sandbox: { requires: { 'rollout-queue': 'latest-ish!' } } });
    expect(parsed.success).toBe(false);
    const issue = parsed.error?.issues[0];
    expect(issue?.path).toEqual(['sandbox', 'requires', 'rollout-queue']);
    expect(issue?.message).toContain('semver ranges like ">=0.1.0 <0.2.0"');
  });

  it('rejects a key that is not an npm package name', () => {
    const parsed = RolloutSpecSchema.safeParse({ ...base, sandbox: { requires: { 'Not A Package': '^1.0.0' } } });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toContain('npm package names');
    expect(parsed.error?.issues[0]?.path).toEqual(['sandbox', 'requires', 'Not A Package']);
  });
});
