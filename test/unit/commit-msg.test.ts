import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

const ROOT = join(__dirname, '..', '..');
const HOOKS = join(ROOT, '.githooks');
const work = mkdtempSync(join(tmpdir(), 'settle-commit-msg-'));
after(() => rmSync(work, { recursive: true, force: true }));

function git(cwd: string, ...args: string[]) {
  return spawnSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@example.com',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@example.com',
    },
  });
}

/** A fresh repository whose commits go through settle's hooks. */
function repository(name: string): string {
  const dir = join(work, name);
  mkdirSync(dir);
  assert.equal(git(dir, 'init', '-q').status, 0);
  assert.equal(git(dir, 'config', 'core.hooksPath', HOOKS).status, 0);
  return dir;
}

function commit(dir: string, message: string) {
  writeFileSync(join(dir, 'file.txt'), message);
  git(dir, 'add', 'file.txt');
  return git(dir, 'commit', '-q', '-m', message);
}

describe('the commit-msg hook', () => {
  test('takes a subject of 72 characters, counted as characters, with a long body', () => {
    const dir = repository('good');
    const subject = `workflows: ${'é'.repeat(61)}`;
    assert.equal([...subject].length, 72);
    const committed = commit(dir, `${subject}\n\n${'a body line may run long; '.repeat(10)}`);
    assert.equal(committed.status, 0, committed.stderr);
    assert.equal(git(dir, 'log', '-1', '--format=%s').stdout.trim(), subject);
  });

  test('refuses a subject of 73 characters and commits nothing', () => {
    const dir = repository('bad');
    const subject = `workflows: ${'x'.repeat(62)}`;
    const refused = commit(dir, `${subject}\n\nwhy`);
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /the subject is 73 characters, at most 72/);
    assert.notEqual(git(dir, 'rev-parse', '--verify', '-q', 'HEAD').status, 0, 'a commit was made');
  });

  test("reads the subject past git's comment lines, and lets git's own merge subjects through", () => {
    const message = join(work, 'MSG');
    const run = (text: string) => {
      writeFileSync(message, text);
      return spawnSync(process.execPath, [join(HOOKS, 'commit-msg'), message], { encoding: 'utf8' }).status;
    };
    assert.equal(run(`# Please enter the commit message\n\n${'y'.repeat(73)}\n`), 1);
    assert.equal(run(`# ${'a comment '.repeat(20)}\nshort subject\n`), 0);
    assert.equal(run(`Merge branch '${'a-long-branch-name-'.repeat(4)}' into main\n`), 0);
  });
});

describe("package.json's prepare", () => {
  const prepare = (
    JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
  ).scripts.prepare!;

  test('points a checkout at .githooks', () => {
    const dir = join(work, 'checkout');
    mkdirSync(join(dir, '.githooks'), { recursive: true });
    git(dir, 'init', '-q');
    assert.equal(spawnSync('sh', ['-c', prepare], { cwd: dir }).status, 0);
    assert.equal(git(dir, 'config', 'core.hooksPath').stdout.trim(), '.githooks');
  });

  test('succeeds where there is no repository (a tarball) or no .githooks (the image build)', () => {
    const dir = join(work, 'tarball');
    mkdirSync(join(dir, '.githooks'), { recursive: true });
    const done = spawnSync('sh', ['-c', prepare], {
      cwd: dir,
      env: { ...process.env, GIT_CEILING_DIRECTORIES: work },
    });
    assert.equal(done.status, 0);
    assert.equal(spawnSync('sh', ['-c', prepare], { cwd: work }).status, 0, 'without .githooks');
  });
});
