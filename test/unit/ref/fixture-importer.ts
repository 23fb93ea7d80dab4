import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Importer } from '../../../src/ref/index.js';

/** Directory of the ref fixture modules. */
export const FIXTURES = fileURLToPath(new URL('../../fixtures/ref/', import.meta.url));

/** An importer that records every specifier it is asked for. */
export interface RecordingImporter extends Importer {
  readonly calls: string[];
}

/**
 * An importer mapping bare specifiers to fixture files (`fixture-pkg/good` →
 * test/fixtures/ref/good.mjs) or to in-memory namespaces, so no node_modules install is
 * needed. Unknown specifiers fail like Node does (ERR_MODULE_NOT_FOUND).
 */
export function fixtureImporter(map: Record<string, string | object>): RecordingImporter {
  const calls: string[] = [];
  const importer = async (specifier: string): Promise<unknown> => {
    calls.push(specifier);
    const entry = Object.prototype.hasOwnProperty.call(map, specifier) ? map[specifier] : undefined;
    if (entry === undefined) {
      throw Object.assign(new Error(`Cannot find package '${specifier}' imported from /worker`), { code: 'ERR_MODULE_NOT_FOUND' });
    }
    if (typeof entry === 'string') return import(pathToFileURL(`${FIXTURES}${entry}`).href);
    return entry;
  };
  return Object.assign(importer, { calls });
}
