// ACCEPTANCE 3 and the hostile-target table: a module the worker refuses is never imported,
// so its top level never runs.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_ALLOWLIST, RefError, clearRefCache, ref, resolveRef, type Importer } from '../../../src/ref/index.js';
import { FIXTURES, fixtureImporter } from './fixture-importer.js';

let dir: string;
let marker: string;
let imports = 0;

/** Imports the marker fixture afresh (a new URL each time), whatever the specifier. */
function markerImporter(): Importer & { calls: string[] } {
  const calls: string[] = [];
  const importer = async (specifier: string): Promise<unknown> => {
    calls.push(specifier);
    return import(`${pathToFileURL(join(FIXTURES, 'marker.mjs')).href}?n=${++imports}`);
  };
  return Object.assign(importer, { calls });
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rq-ref-marker-'));
  marker = join(dir, 'imported');
  process.env.RQ_REF_MARKER = marker;
});

afterEach(() => {
  delete process.env.RQ_REF_MARKER;
  rmSync(dir, { recursive: true, force: true });
  clearRefCache();
});

describe('ACCEPTANCE 3: refused before import', () => {
  it('a module outside the allowlist is refused and its top level never runs', async () => {
    const importer = fixtureImporter({ 'fixture-evil/marker': 'marker.mjs' });
    const promise = resolveRef(ref('fixture-evil/marker:make'), { allow: DEFAULT_ALLOWLIST, importer });
    await expect(promise).rejects.toMatchObject({ name: 'RefError', code: 'not-allowed' });
    expect(importer.calls).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });

  it('control: once allowed, the same module is imported and leaves its marker', async () => {
    const importer = markerImporter();
    const fn = await resolveRef(ref('fixture-evil/marker:make', { answer: 7 }), { allow: ['fixture-evil/*'], importer });
    expect(fn()).toBe(7);
    expect(importer.calls).toEqual(['fixture-evil/marker']);
    expect(existsSync(marker)).toBe(true);
  });

  it('a refused nested Ref stops the whole tree before any import', async () => {
    const importer = markerImporter();
    const outer = ref('fixture-pkg/good:linear', { judge: ref('fixture-evil/marker:make') });
    await expect(resolveRef(outer, { allow: ['fixture-pkg/*'], importer })).rejects.toMatchObject({ code: 'not-allowed', path: 'config.judge' });
    expect(importer.calls).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });
});

/** Targets refused whatever the allowlist; `build` says ref() refuses them too. */
const HOSTILE: Array<[target: string, code: 'not-allowed' | 'malformed-target']> = [
  ['node:fs:readFileSync', 'not-allowed'],
  ['node:child_process:exec', 'not-allowed'],
  ['fs:readFileSync', 'not-allowed'],
  ['fs/promises:readFile', 'not-allowed'],
  ['child_process:exec', 'not-allowed'],
  ['process:exit', 'not-allowed'],
  ['vm:runInThisContext', 'not-allowed'],
  ['worker_threads:Worker', 'not-allowed'],
  ['module:createRequire', 'not-allowed'],
  ['./x:y', 'not-allowed'],
  ['../x:y', 'not-allowed'],
  ['.:y', 'not-allowed'],
  ['/etc/passwd:x', 'not-allowed'],
  ['/work/main/test/fixtures/ref/marker.mjs:make', 'not-allowed'],
  ['file:///tmp/x.mjs:y', 'not-allowed'],
  ['data:text/javascript,export default 1:x', 'not-allowed'],
  ['http://evil/x:y', 'not-allowed'],
  ['https://evil/x.mjs:y', 'not-allowed'],
  ['rollout-queue:y:z', 'not-allowed'],
  ['C:\\evil\\x:y', 'not-allowed'],
  ['rollout-queue/../x:y', 'malformed-target'],
  ['rollout-queue/..:y', 'malformed-target'],
  ['rollout-queue//x:y', 'malformed-target'],
  ['rollout-queue/:y', 'malformed-target'],
  ['rollout-queue /x:y', 'malformed-target'],
  [' rollout-queue:y', 'malformed-target'],
  ['rollout-queue\n:y', 'malformed-target'],
  ['rollout-queue\\..\\x:y', 'malformed-target'],
  ['rollout-queue/\0:y', 'malformed-target'],
  ['rollout-queue/%2e%2e/x:y', 'malformed-target'],
  ['ROLLOUT-QUEUE:y', 'malformed-target'],
  ['\\\\server\\share:y', 'malformed-target'],
  ['@evil/../rollout-queue:y', 'malformed-target'],
  ['#internal:y', 'malformed-target'],
  ['rollout-queue', 'malformed-target'],
  ['rollout-queue:', 'malformed-target'],
  [':y', 'malformed-target'],
  ['rollout-queue:y-z', 'malformed-target'],
];

/** Well-formed targets the default allowlist refuses (the builder cannot know the worker's list). */
const OUTSIDE_DEFAULT = ['rollout-queue-evil:y', 'rollout-queue.evil:y', '@rollout-queue/x:y', 'rollout-queuex/rewards:y', 'evil/rollout-queue:y', 'node:y'];

describe('hostile targets', () => {
  // Even a generous allowlist never admits these.
  const generous = [...DEFAULT_ALLOWLIST, '@evil/*', 'evil/*', 'x/*', 'fixture-pkg/*'];

  it.each(HOSTILE)('%j is refused (%s) by resolveRef without importing', async (target, code) => {
    const importer = markerImporter();
    const error = await resolveRef({ $ref: target, config: {} }, { allow: generous, importer }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(RefError);
    expect((error as RefError).code).toBe(code);
    expect((error as RefError).message).toContain(`Ref ${JSON.stringify(target)}`);
    expect(importer.calls).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });

  it.each(HOSTILE)('%j is refused (%s) by ref() already', (target, code) => {
    expect(() => ref(target)).toThrow(RefError);
    try {
      ref(target);
    } catch (error) {
      expect((error as RefError).code).toBe(code);
    }
  });

  it.each(HOSTILE)('%j nested inside an allowed Ref is refused without importing', async (target, code) => {
    const importer = markerImporter();
    const outer = { $ref: 'fixture-pkg/good:linear', config: { judge: { $ref: target } } };
    await expect(resolveRef(outer, { allow: generous, importer })).rejects.toMatchObject({ code, path: 'config.judge' });
    expect(importer.calls).toEqual([]);
  });

  it.each(OUTSIDE_DEFAULT)('%j is built by ref() but refused by the default allowlist without importing', async (target) => {
    expect(() => ref(target)).not.toThrow();
    const importer = markerImporter();
    await expect(resolveRef(ref(target), { allow: DEFAULT_ALLOWLIST, importer })).rejects.toMatchObject({ code: 'not-allowed' });
    expect(importer.calls).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });
});
