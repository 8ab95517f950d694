// The import rules `npm run lint` checks (dependency-cruiser): no import cycle between modules or between
// folders, a domain that imports nothing of the app, workflow code that imports only what a deterministic
// sandbox may run, platform folders that import nothing of each other, and developer tools the product
// never imports. Type-only imports count like any other.

const npm = (name) => `(^|/)node_modules/${name}/`;

/** Workflow code: bundled for Temporal's sandbox, replayed from histories. */
const workflowCode = ['^workflows/', '^bench/baseline/workflows\\.ts$'];

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-module-cycle',
      comment: 'Two modules that import each other (directly or through others) are one module in two files.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-folder-cycle',
      comment: 'A folder imports nothing of a folder that imports it (a folder counts with everything under it).',
      severity: 'error',
      scope: 'folder',
      from: {},
      to: { circular: true },
    },
    {
      name: 'domain-imports-nothing-of-the-app',
      comment:
        'src/domain is what every layer shares: it imports only itself and TypeBox, never a Node built-in, ' +
        'pg, Fastify, the Temporal SDK or another part of albumflow.',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { pathNot: ['^src/domain/', npm('typebox')] },
    },
    {
      name: 'workflow-code-is-deterministic',
      comment:
        'Workflow code imports only @temporalio/workflow, @temporalio/common, src/domain and workflows/ ' +
        '(no Node built-in, no I/O, no activity code).',
      severity: 'error',
      from: { path: workflowCode },
      to: { pathNot: ['^workflows/', '^src/domain/', npm('@temporalio/workflow'), npm('@temporalio/common')] },
    },
    {
      name: 'db-imports-no-layer-above-it',
      comment: 'src/db serves the layers above it (HTTP, the console, the dispatcher, the activities, the workflows).',
      severity: 'error',
      from: { path: '^src/db/' },
      to: { path: ['^workflows/', '^activities/', '^src/(?!db/|common/|domain/)', '^tools/'] },
    },
    {
      name: 'media-store-imports-only-common-and-db',
      comment:
        'src/media (the media store and its links) is what downloads, the media routes, thumbnails and the notifications ' +
        'share: it imports src/common and src/db only, never a layer that uses it.',
      severity: 'error',
      from: { path: '^src/media/' },
      to: { path: ['^workflows/', '^activities/', '^src/(?!media/|common/|db/)', '^src/[^/]+\\.ts$'] },
    },
    {
      name: 'no-platform-imports-another',
      comment:
        'A platform folder (src/platforms/<platform>/) imports nothing of another platform folder: what two platforms ' +
        'share lives once, in src/platforms/ beside them.',
      severity: 'error',
      from: { path: '^src/platforms/([^/]+)/' },
      to: { path: '^src/platforms/[^/]+/', pathNot: ['^src/platforms/$1/'] },
    },
    {
      name: 'only-the-registry-names-a-platform',
      comment:
        'Nothing outside src/platforms/ names a platform folder: the app reaches every platform through the interface ' +
        '(src/platforms/platform.ts) and the registration (src/platforms/index.ts). Tests and the bench may.',
      severity: 'error',
      from: { path: '^(src|workflows|activities)/', pathNot: '^src/platforms/' },
      to: { path: '^src/platforms/[^/]+/' },
    },
    {
      name: 'network-guard-is-a-leaf',
      comment:
        'The network guard (what downloads and outbound delivery may connect to) imports nothing of albumflow, so every ' +
        'layer that opens a connection to an address a sender or a customer gave can use it.',
      severity: 'error',
      from: { path: '^src/common/network-guard\\.ts$' },
      to: { path: ['^src/', '^workflows/', '^activities/', '^tools/'] },
    },
    {
      name: 'tools-stay-out-of-the-product',
      comment: 'tools/ holds developer tools (the real Temporal server and the S3 server of the tests): the product never imports them.',
      severity: 'error',
      from: { path: '^(src|workflows|activities)/' },
      to: { path: '^tools/' },
    },
    {
      name: 'activities-only-in-the-worker',
      comment: "The activities are the worker's: the service binds them, and nothing else of the app imports them.",
      severity: 'error',
      from: { path: '^(src|workflows)/', pathNot: ['^src/process/start\\.ts$'] },
      to: { path: '^activities/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|coverage|\\.data)/' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    skipAnalysisNotInRules: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'],
    },
  },
};
