// Layer rules of src/ (docs/design.md "Layout"), checked by `npm run lint:imports`:
//   spec ← ref, lease, platform ← producer, consumer ← cli;  producer ↛ consumer and back;
//   built-ins (runners, rewards, harness/worker) import only spec (+ sandbox for runners; + sandbox and runners for
//   rewards, whose command reward runs its judge through runContained);
//   the harness seam is one folder of three layers: harness/worker (a built-in the workers resolve
//   by Ref), harness/coordinator (queueDispatch, above the producer), harness/http (the wire:
//   route, body reading, and a client whose entry reaches neither Redis nor the producer);
//   dashboard → spec, lease, platform;  gateway is a top layer like cli but never imports consumer;
//   no cycles anywhere.
// A layer is the first folder under src/ (under src/harness/, the second); files directly in
// src/ (the package entry) may import any layer but cli. Static imports, re-exports, `import type`, side-effect imports
// and `import('literal')` all count. Importing the package by its own name (`rollout-queue/…`)
// from src/ is refused: it would resolve to dist/ and hide a layer crossing.
//
// A folder that is no layer below fails `no-unknown-layer`: add it to ALLOWED with its rules.

/** Which layers each layer may import besides itself. `*` = any. */
const ALLOWED = {
  spec: [],
  ref: ['spec'],
  lease: ['spec'],
  platform: ['spec'],
  sandbox: ['spec'],
  runners: ['spec', 'sandbox'],
  // rewards: the command reward runs its judge program through the runners' runContained (same containment as codeRunner's artifact).
  rewards: ['spec', 'sandbox', 'runners'],
  'harness/worker': ['spec'],
  producer: ['spec', 'ref', 'lease', 'platform'],
  'harness/coordinator': ['spec', 'ref', 'lease', 'platform', 'producer', 'harness/worker'],
  'harness/http': ['spec', 'platform', 'harness/worker', 'harness/coordinator'],
  consumer: ['spec', 'ref', 'lease', 'platform', 'sandbox'],
  dashboard: ['spec', 'lease', 'platform'],
  gateway: ['spec', 'ref', 'lease', 'platform', 'producer', 'runners', 'rewards', 'harness/worker', 'harness/coordinator', 'harness/http'],
  cli: ['*'],
};
const ROOT_MAY_NOT = ['cli'];
const LAYERS = Object.keys(ALLOWED);

const layerRules = Object.entries(ALLOWED)
  .filter(([, allowed]) => !allowed.includes('*'))
  .map(([layer, allowed]) => ({
    name: `layer-${layer}`,
    comment: `src/${layer} may import only ${[layer, ...allowed].map((name) => `src/${name}`).join(', ')} (docs/design.md "Layout")`,
    severity: 'error',
    from: { path: `^src/${layer}/` },
    to: { path: '^src/', pathNot: `^src/(${[layer, ...allowed].join('|')})/` },
  }));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import cycle: modules that need each other belong in one layer, or their shared part lower',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    ...layerRules,
    {
      name: 'harness-http-client-light',
      comment: 'The HTTP client (rollout-queue/dispatch/http) is for a coordinator without Redis: at run time its files import only each other, the receipt forms and the harness shapes (type-only imports are erased)',
      severity: 'error',
      from: { path: '^src/harness/(http/(client|http-dispatch|wire)|worker/(receipt-forms|trace-replay))\\.ts$' },
      to: { path: '^src/', pathNot: '^src/harness/(http/(http-dispatch|wire)|worker/(receipt-forms|trace-replay|harness-shapes|dispatch-types))\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'harness-http-client-no-redis',
      comment: 'The HTTP client never loads Redis, BullMQ or zod',
      severity: 'error',
      from: { path: '^src/harness/(http/(client|http-dispatch|wire)|worker/(receipt-forms|trace-replay))\\.ts$' },
      to: { path: 'node_modules/(bullmq|ioredis|zod)/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'layer-root',
      comment: `The package entry (files directly in src/) may import any layer but ${ROOT_MAY_NOT.join(', ')}`,
      severity: 'error',
      from: { path: '^src/[^/]+$' },
      to: { path: `^src/(${ROOT_MAY_NOT.join('|')})/` },
    },
    {
      name: 'no-unknown-layer',
      comment: `Every folder under src/ is a layer listed in ALLOWED of .dependency-cruiser.cjs (${LAYERS.join(', ')}); add the new one with its rules`,
      severity: 'error',
      from: { path: '^src/[^/]+/', pathNot: `^src/(${LAYERS.join('|')})/` },
      to: {},
    },
    {
      name: 'no-self-import',
      comment: 'Import sibling layers by relative path, not by the package name (that resolves to dist/ and hides the layer)',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(dist|bin)/' },
    },
    {
      name: 'no-outside-src',
      comment: 'src/ imports only src/ and installed packages (never test/, scripts/, examples/)',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|scripts|examples|bench)/' },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that resolves to nothing: a typo, or a package missing from package.json',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.d\\.ts$' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
