import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join, relative } from 'node:path';
import { test } from 'node:test';

const ROOT = join(__dirname, '..', '..');
const MAIN = join(ROOT, 'src', 'cli', 'main.ts');

/**
 * Outside commander and src/cli, what `--help` may load: plain modules that import no package. The
 * signal owner and the error classes main.ts catches, and the constants the help text names (kinds,
 * defaults, delivery targets). Anything else (src/app, src/db's queries, src/roles, config, pg, the
 * Temporal SDK, the providers, src/cli/context.ts's dependencies) belongs inside an action.
 */
const PLAIN = new Set([
  'src/lib/shutdown.ts',
  'src/config/error.ts',
  'src/roles/refusal.ts',
  'src/db/exceptions.ts',
  'src/app/import-pace.ts',
]);

function allowed(path: string): boolean {
  if (path.includes('/node_modules/')) return /\/node_modules\/commander\//.test(path);
  const file = relative(ROOT, path).split('\\').join('/');
  return file.startsWith('src/cli/') || file.startsWith('src/domain/') || PLAIN.has(file);
}

/** Runs `settle <args>` from source and returns its stdout and every module it loaded. */
function helpOf(args: string[]): Promise<{ code: number | null; stdout: string; loaded: string[] }> {
  // The exit hook goes first: --help exits from inside main.ts's parse. What tsx itself loaded is
  // in require.cache before main.ts, and left out.
  const probe = `const before = new Set(Object.keys(require.cache));
process.on('exit', () => { process.stderr.write('\\nLOADED ' + JSON.stringify(Object.keys(require.cache).filter((p) => !before.has(p)))); });
require(${JSON.stringify(MAIN)});`;
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--require', require.resolve('tsx/cjs'), '-e', probe, 'settle', ...args],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      const line = /\nLOADED (\[.*\])$/.exec(stderr);
      if (!line) return reject(new Error(`settle ${args.join(' ')}: no module list; stderr: ${stderr}`));
      resolve({ code, stdout, loaded: JSON.parse(line[1]!) as string[] });
    });
  });
}

/** The command names in a help text's "Commands:" section, without `help`. */
function commandsIn(help: string): string[] {
  const section = help.split(/^Commands:$/m)[1] ?? '';
  return [...section.matchAll(/^ {2}([a-z][\w-]*)/gm)].map((m) => m[1]!).filter((name) => name !== 'help');
}

async function assertLoadsOnlyCommander(args: string[]): Promise<string> {
  const run = await helpOf(args);
  const label = `settle ${args.join(' ')}`;
  assert.equal(run.code, 0, `${label} exited ${run.code}`);
  assert.match(run.stdout, /Usage: settle/, label);
  // A package is named once (its first file loaded), a source file by its path.
  const outside = [
    ...new Set(
      run.loaded
        .filter((path) => !allowed(path))
        .map((path) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1] ?? relative(ROOT, path)),
    ),
  ];
  assert.deepEqual(
    outside,
    [],
    `${label} loads modules outside commander and src/cli: ${outside.join(', ')}`,
  );
  return run.stdout;
}

// A bound on a hang (about 30 CLI starts, at most 15 at once), not on the machine's speed.
test(
  '`settle --help` and every `settle <command> --help` load only commander and src/cli',
  { timeout: 300_000 },
  async () => {
    const top = commandsIn(await assertLoadsOnlyCommander(['--help']));
    // Every command settle has, so that a command added later is checked too.
    assert.ok(top.length >= 14, `too few commands in settle --help: ${top.join(', ')}`);
    const helps = await Promise.all(top.map((name) => assertLoadsOnlyCommander([name, '--help'])));
    const nested = top.flatMap((name, i) => commandsIn(helps[i]!).map((sub) => [name, sub]));
    assert.ok(nested.length > 0, 'no subcommand found (exceptions resolve, shipments add, …)');
    await Promise.all(nested.map((path) => assertLoadsOnlyCommander([...path, '--help'])));
  },
);
