/**
 * The workflow code the worker runs: src/workflows bundled by the SDK's webpack, built once in a
 * short-lived child process and cached with the code, in the checkout's `node_modules/.cache/settle/`
 * (where webpack, babel and eslint keep theirs): every settle process of one checkout, whatever its
 * SETTLE_HOME, builds a source version's bundle once. Bundling inside the worker would leave webpack's
 * memory in the worker's RSS for good (docs/performance.md); the child's memory goes when it exits.
 *
 * The cache file is named by a hash of every file under src/ (type-only imports from activities
 * reach most of it anyway), the lockfile and the SDK version, so an edited workflow never runs from
 * a stale bundle. It is written to a temporary file and renamed, so a process starting beside the
 * builder reads the whole bundle or none.
 *
 * From the compiled dist/ (the image), the same code bundles dist/workflows, and `node
 * dist/worker-runtime/workflow-bundle.js --prebuild` (the image's build stage) writes the bundle into
 * dist/workflow-bundles/, where a worker finds it without writing anywhere: a read-only root
 * filesystem needs no writable cache.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { bundleWorkflowCode, DefaultLogger, type BundleOptions } from '@temporalio/worker';
import { stateDir } from '../config/dev-state';
import { PROJECT_ROOT } from '../lib/paths';
import { FAILURE_CONVERTER_PATH } from '../temporal/data-converter';

/**
 * settle's workflow modules, and the SDK modules they import, are evaluated once per worker thread,
 * when the SDK builds its reusable V8 context (the bundler's `preloadModules`), and shared by every run.
 * Without it the SDK evaluates each module a run imports again for every run, worker CPU paid on every
 * payment event (docs/performance.md, "Where one event's CPU goes"). The SDK deep-freezes what
 * the shared modules export; what they keep at module scope must be constants or pure memos, never
 * state one run writes and another reads (test/unit/workflow-module-scope.test.ts).
 */
const WORKFLOWS_PATH = require.resolve('../workflows');
/** src/: everything the workflows can import lies under it. */
const SOURCE_ROOT = join(__dirname, '..');

/** Bundles built with the code (dist/workflow-bundles/), outside the hashed sources. */
const PREBUILT_DIR = join(SOURCE_ROOT, 'workflow-bundles');
/** Running the compiled JavaScript: no tsx to load in the bundling child. */
const COMPILED = __filename.endsWith('.js');

const BUNDLE_PREFIX = 'workflow-bundle-';
/** Bundles of other source versions unused for this long are deleted when a new one is built. */
const STALE_AFTER_MS = 60 * 60 * 1000;

/**
 * settle's workflow tracing interceptors (src/workflows/tracing-interceptors.ts), bundled only into the
 * traced variant: a worker without tracing runs no span code in its workflows. Preloaded with the
 * workflows, as they keep no state at module scope.
 */
const TRACING_INTERCEPTORS_PATH = require.resolve('../workflows/tracing-interceptors');

/** Which bundle: failures encoded (payload keys), workflow spans (tracing on). */
export type BundleVariant = { encodedFailures: boolean; traced: boolean };

const bundlePaths = new Map<string, Promise<string>>();

/**
 * Path of the bundle for the current sources, built on the first call of this process if need be.
 * `encodedFailures`: the variant whose workflows write failure messages into (encrypted) payloads,
 * for a worker with payload keys (temporal/failure-converter.ts). `traced`: the variant with settle's
 * workflow tracing interceptors, for a worker with tracing on.
 */
export function workflowBundlePath(options: Partial<BundleVariant> = {}): Promise<string> {
  const variant = { encodedFailures: options.encodedFailures === true, traced: options.traced === true };
  const key = bundleName(variant, '');
  let path = bundlePaths.get(key);
  if (!path) bundlePaths.set(key, (path = ensureBundle(variant)));
  return path;
}

async function ensureBundle(variant: BundleVariant): Promise<string> {
  const name = bundleName(variant);
  const prebuilt = join(PREBUILT_DIR, name);
  if (existsSync(prebuilt)) return prebuilt;
  const dir = cacheDir();
  const file = join(dir, name);
  if (existsSync(file)) {
    markUsed(file);
    return file;
  }
  await buildInChildProcess(file, variant);
  deleteStaleBundles(dir, file);
  return file;
}

/**
 * The first writable of `node_modules/.cache/settle` (the checkout's) and `<state>/cache`; a private
 * temporary folder where neither is (a read-only container without a prebuilt bundle).
 */
function cacheDir(): string {
  for (const dir of [join(PROJECT_ROOT, 'node_modules', '.cache', 'settle'), join(stateDir(), 'cache')]) {
    try {
      mkdirSync(dir, { recursive: true });
      accessSync(dir, constants.W_OK);
      return dir;
    } catch {
      // Read-only or absent: the next one.
    }
  }
  return mkdtempSync(join(tmpdir(), 'settle-cache-'));
}

function bundleKey(): string {
  const hash = createHash('sha256');
  for (const file of filesUnder(SOURCE_ROOT)) {
    hash.update(relative(SOURCE_ROOT, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  const lockfile = join(PROJECT_ROOT, 'package-lock.json');
  if (existsSync(lockfile)) hash.update(readFileSync(lockfile));
  for (const pkg of ['@temporalio/worker', '@temporalio/workflow']) {
    const { version } = JSON.parse(readFileSync(require.resolve(`${pkg}/package.json`), 'utf8')) as {
      version: string;
    };
    hash.update(`${pkg}@${version}\0`);
  }
  return hash.digest('hex').slice(0, 16);
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      if (path === PREBUILT_DIR) return [];
      return entry.isDirectory() ? filesUnder(path) : [path];
    });
}

function buildInChildProcess(file: string, variant: BundleVariant): Promise<void> {
  return new Promise((resolve, reject) => {
    const loader = COMPILED ? [] : ['--require', require.resolve('tsx/cjs')];
    const args = [
      __filename,
      file,
      ...(variant.encodedFailures ? ['--encoded-failures'] : []),
      ...(variant.traced ? ['--traced'] : []),
    ];
    const child = spawn(process.execPath, [...loader, ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let errors = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (errors = (errors + chunk).slice(-4000)));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0 && existsSync(file)) resolve();
      else
        reject(new Error(`bundling the workflows failed (${signal ?? `exit ${code}`}):\n${errors.trim()}`));
    });
  });
}

/** Touched on every use, so a process building another source version does not delete it. */
function markUsed(file: string): void {
  const now = new Date();
  try {
    utimesSync(file, now, now);
  } catch {
    // A read-only cache is still usable.
  }
}

function deleteStaleBundles(dir: string, current: string): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (!name.startsWith(BUNDLE_PREFIX) || path === current) continue;
    try {
      if (Date.now() - statSync(path).mtimeMs > STALE_AFTER_MS) rmSync(path, { force: true });
    } catch {
      // Another process removed it first.
    }
  }
}

/** How a variant's bundle is built: the workflows, the modules preloaded, the variant's converter and interceptors. */
export function bundleOptions(variant: BundleVariant): BundleOptions {
  return {
    workflowsPath: WORKFLOWS_PATH,
    preloadModules: variant.traced ? [WORKFLOWS_PATH, TRACING_INTERCEPTORS_PATH] : [WORKFLOWS_PATH],
    ...(variant.encodedFailures ? { failureConverterPath: FAILURE_CONVERTER_PATH } : {}),
    ...(variant.traced ? { workflowInterceptorModules: [TRACING_INTERCEPTORS_PATH] } : {}),
    logger: new DefaultLogger('WARN'),
  };
}

/** The child: bundles, then writes the file whole (temporary name, then rename). */
async function buildBundle(file: string, variant: BundleVariant): Promise<void> {
  const { code } = await bundleWorkflowCode(bundleOptions(variant));
  const temporary = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(temporary, code);
  renameSync(temporary, file);
}

/** `--prebuild`: every variant's bundle for these sources into PREBUILT_DIR (the image's build stage). */
async function prebuild(): Promise<void> {
  mkdirSync(PREBUILT_DIR, { recursive: true });
  for (const encodedFailures of [false, true]) {
    for (const traced of [false, true]) {
      const file = join(PREBUILT_DIR, bundleName({ encodedFailures, traced }));
      await buildBundle(file, { encodedFailures, traced });
      process.stdout.write(`${relative(process.cwd(), file)}\n`);
    }
  }
}

/** The bundle's file name: its source version, and its variant (failures encoded, traced). */
function bundleName(variant: BundleVariant, key = bundleKey()): string {
  const prefix = `${variant.encodedFailures ? 'encoded-failures-' : ''}${variant.traced ? 'traced-' : ''}`;
  return `${BUNDLE_PREFIX}${prefix}${key}.js`;
}

if (require.main === module) {
  const arg = process.argv[2]!;
  const flags = process.argv.slice(3);
  const variant = {
    encodedFailures: flags.includes('--encoded-failures'),
    traced: flags.includes('--traced'),
  };
  (arg === '--prebuild' ? prebuild() : buildBundle(arg, variant)).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}
