// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Workflow code is replayed: no Node built-ins, no I/O, no configuration.
const workflowPatterns = [
  { group: ['node:*'], message: 'Workflow code must not import Node built-ins.' },
  {
    group: ['fs', 'path', 'http', 'https', 'net', 'crypto', 'child_process', 'os', 'pg', 'fastify', 'pino'],
    message: 'Workflow code must stay deterministic: no I/O.',
  },
  {
    group: ['../activities', '../activities/*', '../db/*', '../gateway/*', '../config', '../stack/*'],
    allowTypeImports: true,
    message: 'Import activities as types only; no I/O modules in workflows.',
  },
  {
    // src/temporal/ is the client side: the connection, the codec, and what settle prepares in
    // Temporal (Schedules, search attributes, Worker Deployments) through the client SDK.
    group: ['../temporal/*', '../client'],
    allowTypeImports: true,
    message:
      'Workflow code does not call Temporal through the client: src/temporal/ and src/client.ts stay out of the bundle.',
  },
  {
    // Each run evaluates the bundle's modules again, so zod and its schemas would cost CPU per event.
    group: ['zod', 'zod/*', '../domain/payment-event', '../domain/reminder'],
    allowTypeImports: true,
    message: 'No zod in the workflow bundle: check workflow input with domain/payment-event-shape.ts.',
  },
];

/** The tools under tools/, each a folder of its own (tools/README.md). */
const TOOLS = [
  'api-check',
  'bench',
  'chaos',
  'ci',
  'compose',
  'histories',
  'images',
  'k8s',
  'manifests',
  'monitoring',
  'topology',
];

/** A relative specifier that climbs into one of `folders` (`../x`, `../../x/y`). */
const climbsInto = (folders) => `^(\\.\\./)+(${folders.join('|')})(/|$)`;

const SRC_FORBIDDEN = topLevelPattern(['tools', 'testkit', 'test', 'bin'], 'src/');

/**
 * What a comment in src/ must not carry: a comment says what and why, and a measured figure or an
 * issue number in it goes stale the day it is written (figures live in docs/performance.md).
 */
const COMMENT_FIGURES = [
  {
    pattern: /(?<![\w.])\d+(?:[.,]\d+)*\s?(?:ms|milliseconds?|[µμ]s|microseconds?)\b/gi,
    what: 'a figure in ms',
  },
  { pattern: /(?<![\w.])\d+(?:[.,]\d+)*\s?(?:%|per\s?cent\b)/gi, what: 'a percentage' },
  { pattern: /\bissues?\s+#?\d+/gi, what: 'an issue number' },
  { pattern: /(?<![\w&/#])#\d+\b/g, what: 'an issue number' },
];

/** settle's own lint rules: `settle/no-figures-in-comments`. */
export const settlePlugin = {
  rules: {
    'no-figures-in-comments': {
      meta: {
        type: 'suggestion',
        docs: { description: 'Refuse measured figures (ms, %) and issue numbers in comments.' },
        messages: {
          figure:
            '{{what}} ("{{text}}") in a comment: say what and why; figures belong in docs/performance.md.',
        },
        schema: [],
      },
      create(context) {
        const source = context.sourceCode;
        return {
          Program() {
            for (const comment of source.getAllComments()) {
              const start = comment.range[0] + 2; // past `//` or `/*`
              for (const { pattern, what } of COMMENT_FIGURES) {
                for (const match of comment.value.matchAll(pattern)) {
                  const from = start + match.index;
                  context.report({
                    loc: {
                      start: source.getLocFromIndex(from),
                      end: source.getLocFromIndex(from + match[0].length),
                    },
                    messageId: 'figure',
                    data: { what, text: match[0] },
                  });
                }
              }
            }
          },
        };
      },
    },
  },
};

export default tseslint.config(
  { ignores: ['node_modules/**', '.settle/**', '.tools/**', 'bin/**', 'dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test's describe/test return promises the runner itself awaits.
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'test', 'it', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  ...houseRules(),
  ...layerRules(),
  {
    files: ['src/**/*.ts'],
    plugins: { settle: settlePlugin },
    rules: { 'settle/no-figures-in-comments': 'error' },
  },
);

/**
 * The house (docs/architecture.md, "The house"): src ← testkit ← tools/<tool>, test. src/
 * imports only src/; testkit/ only src/ and itself; a tool src/, testkit/ and its own folder,
 * never test/ or another tool; test/ src/, testkit/ and itself, never tools/. Static imports
 * through no-restricted-imports, `import('…')` through no-restricted-syntax;
 * tools/ci/check-cycles.ts checks the same arrows on resolved paths.
 */
function topLevelPattern(forbidden, who) {
  return {
    regex: climbsInto(forbidden),
    message: `${who} must not import ${forbidden.join(', ')} (docs/architecture.md, "The house").`,
  };
}
function dynamicImportRule(pattern) {
  // esquery reads a regex up to its first slash: the slashes of the pattern are written \x2F.
  const regex = pattern.regex.replaceAll('/', '\\x2F');
  return [
    'error',
    { selector: `ImportExpression > Literal.source[value=/${regex}/]`, message: pattern.message },
  ];
}
function houseRules() {
  const testkit = topLevelPattern(['test', 'tools'], 'testkit/');
  const test = topLevelPattern(['tools'], 'test/');
  const tools = TOOLS.map((tool) => {
    const pattern = topLevelPattern(['test', ...TOOLS.filter((other) => other !== tool)], `tools/${tool}/`);
    return {
      files: [`tools/${tool}/**/*.ts`],
      rules: {
        'no-restricted-imports': ['error', { patterns: [pattern] }],
        'no-restricted-syntax': dynamicImportRule(pattern),
      },
    };
  });
  return [
    {
      files: ['src/**/*.ts'],
      rules: {
        'no-restricted-imports': ['error', { patterns: [SRC_FORBIDDEN] }],
        'no-restricted-syntax': dynamicImportRule(SRC_FORBIDDEN),
      },
    },
    {
      files: ['testkit/**/*.ts'],
      rules: {
        'no-restricted-imports': ['error', { patterns: [testkit] }],
        'no-restricted-syntax': dynamicImportRule(testkit),
      },
    },
    {
      files: ['test/**/*.ts'],
      rules: {
        'no-restricted-imports': ['error', { patterns: [test] }],
        'no-restricted-syntax': dynamicImportRule(test),
      },
    },
    ...tools,
  ];
}

/**
 * The layers of src/, bottom first (docs/architecture.md, "Layers"). A folder imports from its own
 * layer and the layers below, never from above: the edges (gateway, worker-runtime, codec)
 * translate, roles (and src/worker.ts, the worker role) wire them into the processes settle runs,
 * and the composition roots (stack, cli) call roles; stack also holds the developer tools (settle
 * simulate, settle example, the stack's state file), which call the use cases. The use cases (app)
 * and side effects (activities) sit on the SQL and Temporal (src/client.ts, and src/temporal/ with the
 * Schedules, search attributes and Worker Deployments settle prepares), so neither Temporal's set-up
 * nor a use case can reach the developer tools; domain, lib, config and the providers' table (every
 * layer above reads it, the configuration its variables) are the floor. Cycles, within a layer too, are refused by tools/ci/check-cycles.ts
 * (`npm run lint` runs both).
 */
function layerRules() {
  const layers = [
    ['domain', 'lib', 'config', 'providers'],
    ['db', 'temporal', 'client', 'workflows', 'metrics', 'tracing'],
    ['app', 'activities'],
    ['gateway', 'worker-runtime', 'codec'],
    ['roles', 'worker'],
    ['stack', 'cli'],
  ];
  /** Narrower than the layer: what a folder must not import even though the layer would allow it. */
  const alsoForbidden = {
    // Pure rules, safe inside workflows: nothing with I/O, no configuration.
    domain: ['lib', 'config', 'providers'],
    // Helpers with no business: they know none of settle's rules (domain).
    lib: ['domain'],
    // Temporal's side only: the connection and what settle prepares in Temporal (the recovery
    // Schedules read the providers' table), no SQL, no counters (the use cases and the roles put
    // those together with it).
    temporal: ['db', 'metrics', 'tracing', 'client'],
    // The edges do not reach into each other: only roles/ wires them (one function per role), and
    // the composition roots reach them through it.
    gateway: ['worker-runtime', 'codec'],
    'worker-runtime': ['gateway', 'codec'],
    codec: ['gateway', 'worker-runtime'],
    // The worker role (src/worker.ts) loads none of the gateway's modules.
    worker: ['gateway', 'codec'],
    stack: ['cli', 'gateway', 'worker-runtime', 'codec'],
    cli: ['gateway', 'worker-runtime', 'codec'],
  };
  // Domain's rules run inside workflows and in every process: a package would bring I/O, an SDK or
  // configuration with it. Only relative modules, zod for the schemas and currency-codes (ISO 4217's
  // list as plain data) for money.
  const domainPackages = {
    regex: '^(?!\\.\\.?/|zod$|currency-codes$)',
    message:
      'domain/ imports only relative modules, zod and currency-codes: its rules run inside workflows, so nothing with I/O, no SDK (docs/architecture.md, "Layers").',
  };
  // `../x` from a folder, `./x` from src/client.ts and src/worker.ts (a layer entry naming a file).
  const folderPattern = (folders) => `^(\\.\\.?/)+(${folders.join('|')})(/|$)`;
  return layers.flat().map((folder) => {
    const level = layers.findIndex((layer) => layer.includes(folder));
    const above = layers.slice(level + 1).flat();
    const forbidden = [...above, ...(alsoForbidden[folder] ?? [])];
    const layerPattern = {
      regex: folderPattern(forbidden),
      // Workflows name their activities' types (proxyActivities<Activities>); that costs no import at run time.
      allowTypeImports: folder === 'workflows',
      message: `${folder}/ sits below ${forbidden.join(', ')}: imports point downwards only (docs/architecture.md).`,
    };
    return {
      files: [`src/${folder}/**/*.ts`, `src/${folder}.ts`],
      rules: {
        'no-restricted-imports': [
          'error',
          // A folder's rule replaces houseRules()' for src/**, so it carries the house's pattern too.
          {
            patterns: [
              ...(folder === 'workflows' ? workflowPatterns : []),
              ...(folder === 'domain' ? [domainPackages] : []),
              layerPattern,
              SRC_FORBIDDEN,
            ],
          },
        ],
      },
    };
  });
}
