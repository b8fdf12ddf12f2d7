import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/lib/paths';

/**
 * The release before this one, as the rolling-upgrade test runs it and the migration checks read it:
 * the one place it is named. Move it forward when a release ships: `commit` to that release's commit,
 * `lastMigration` to the last migration file it has.
 */
export const PREVIOUS_RELEASE = {
  /** The last commit before migration 017 (`git log -- src/db/migrations/017_claim_partitions.sql`, where the migrations were then). */
  commit: '0e71551ad8c2ad88a71de1e4243076ddb4d970bf',
  lastMigration: '016_foreign_runs.sql',
} as const;

function git(args: string[]): string {
  return execFileSync('git', ['-C', PROJECT_ROOT, ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * Why the previous release's code cannot be read from this checkout (no git, or a shallow clone that
 * lacks the commit), or undefined when it can.
 */
export function previousReleaseUnavailable(): string | undefined {
  try {
    git(['cat-file', '-e', `${PREVIOUS_RELEASE.commit}^{commit}`]);
    return undefined;
  } catch {
    let shallow: boolean;
    try {
      shallow = git(['rev-parse', '--is-shallow-repository']).trim() === 'true';
    } catch {
      return `no git repository at ${PROJECT_ROOT}: the previous release (${PREVIOUS_RELEASE.commit}) cannot be checked out`;
    }
    return shallow
      ? `this clone is shallow and lacks the previous release's commit ${PREVIOUS_RELEASE.commit}: ` +
          '`git fetch --unshallow` (or clone with full history) to run it'
      : `commit ${PREVIOUS_RELEASE.commit} (the previous release) is not in this repository`;
  }
}

/** The migration files the previous release has, read from its commit. */
export function previousReleaseMigrations(): string[] {
  return git(['ls-tree', '--name-only', PREVIOUS_RELEASE.commit, 'src/db/migrations/'])
    .split('\n')
    .map((path) => path.slice('src/db/migrations/'.length))
    .filter((name) => /^\d{3}_[a-z0-9_]+\.sql$/.test(name))
    .sort();
}

/**
 * True when every package the previous release's lockfile installs is in this checkout's lockfile
 * at the same place and version: this checkout's node_modules then serves it as its own would.
 */
function sameInstall(): boolean {
  type Lock = { packages: Record<string, { version?: string }> };
  const ours = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package-lock.json'), 'utf8')) as Lock;
  const theirs = JSON.parse(git(['show', `${PREVIOUS_RELEASE.commit}:package-lock.json`])) as Lock;
  return Object.entries(theirs.packages).every(
    ([path, entry]) => path === '' || ours.packages[path]?.version === entry.version,
  );
}

/**
 * The previous release's files in a temporary folder (`git archive` of its commit), with this
 * checkout's node_modules linked in when the lockfiles agree, else installed there with `npm ci`.
 */
export async function checkoutPreviousRelease(): Promise<{ dir: string; remove(): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'settle-previous-release-'));
  await run('sh', [
    '-c',
    `git -C "$1" archive "$2" | tar -x -C "$3"`,
    'sh',
    PROJECT_ROOT,
    PREVIOUS_RELEASE.commit,
    dir,
  ]);
  if (sameInstall()) symlinkSync(join(PROJECT_ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  else await run('npm', ['ci', '--no-audit', '--no-fund'], dir);
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

function run(command: string, args: string[], cwd?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr}`)),
    );
  });
}
