import { z } from 'zod';
import { findRefIssue } from './ref-target.js';

/**
 * zod schema of a Ref. Parsing fills `config: {}` when absent and reports the path of the
 * first bad value anywhere inside, nested Refs included. It checks form only: whether the
 * module is allowed or exists is decided by the worker (see `src/ref`).
 */
export const RefSchema = z
  .object({
    $ref: z.string().describe('"<module>:<export>", e.g. "rollout-queue/rewards:lastNumber"'),
    config: z
      .record(z.string(), z.unknown())
      .default({})
      .describe('Plain JSON data passed to the factory; may hold nested Refs. Arrays hold scalars only.'),
    call: z.boolean().optional().describe('false: the export already is the function; do not call it with config'),
  })
  .strict()
  .superRefine((value, ctx) => {
    const issue = findRefIssue(value, '');
    if (issue) {
      const path = issue.path.replace(/^\./, '').split(/\.|\[(\d+)\]/).filter((part) => part !== undefined && part !== '');
      ctx.addIssue({ code: 'custom', message: issue.message, path: path.map((part) => (/^\d+$/.test(part) ? Number(part) : part)) });
    }
  })
  .meta({ id: 'Ref', description: 'Reference to code installed on the worker: factory(config) gives the function.' });
