/**
 * Every repository path a document names exists, and every link between documents lands on a heading.
 *
 * Read: README.md, docs/, and every README.md under the code folders
 * (CODE_FOLDERS). A path is any mention, in prose, in backticks or in a code block, that starts with a
 * top-level folder of the repository (TOP_LEVEL: `src/…`, `test/…`, `deploy/…`, `docs/…`, …), read
 * from the repository's root; a Markdown link's target is read from its page's folder. A placeholder
 * (`<name>`, `*`, `{…}`, `…`, `$VAR`) is not a path and is skipped, and so is a file a run writes, one
 * that .gitignore names (`journal/bench-results/latest.json`, `dist/…`).
 *
 * The journal (journal/, beside docs/) is not read: an entry records what was run on its day, with the
 * paths of that day, and a later rename does not rewrite history. The reference pages that link into
 * it are checked.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { PROJECT_ROOT } from '../../src/lib/paths';

const JOURNAL = 'journal';
const TOP_LEVEL = ['src', 'testkit', 'test', 'tools', 'deploy', 'docs', 'bin', '.ci'];
/** The folders of code whose README.md files are read. */
const CODE_FOLDERS = ['src', 'testkit', 'tools'];

/** Repository-relative paths of every .md file under `dir` that `keep` accepts. */
function markdownFiles(dir: string, keep: (path: string) => boolean = () => true): string[] {
  const found: string[] = [];
  const walk = (folder: string) => {
    for (const entry of readdirSync(join(PROJECT_ROOT, folder))) {
      const path = join(folder, entry);
      if (entry === 'node_modules') continue;
      if (statSync(join(PROJECT_ROOT, path)).isDirectory()) walk(path);
      else if (entry.endsWith('.md') && keep(path)) found.push(path);
    }
  };
  walk(dir);
  return found;
}

/** What .gitignore names by a plain path: files and folders a run writes, absent from a clone. */
function written(): string[] {
  return readFileSync(join(PROJECT_ROOT, '.gitignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#') && !/[*?[!]/.test(line));
}

/** The documents whose paths must exist. */
function documents(): string[] {
  const readme = (path: string) => path.endsWith('README.md');
  return [
    'README.md',
    ...markdownFiles('docs'),
    ...CODE_FOLDERS.flatMap((folder) => markdownFiles(folder, readme)),
  ];
}

/** A path that starts at a top-level folder, not preceded by what would make it part of a longer one. */
const MENTION = new RegExp(
  `(?<![\\w./@:-])((?:${TOP_LEVEL.map((dir) => dir.replace('.', '\\.')).join('|')})/[\\w./-]*)([<*{…$]?)`,
  'g',
);

/** The repository paths `text` mentions, each with its line; placeholders left out. */
function mentionedPaths(text: string): { path: string; line: number }[] {
  const found: { path: string; line: number }[] = [];
  text.split('\n').forEach((content, index) => {
    for (const [, raw = '', placeholder] of content.matchAll(MENTION)) {
      if (placeholder) continue;
      // Sentence punctuation after a path is not part of it (no path here ends in a dot).
      found.push({ path: raw.replace(/[.]+$/, ''), line: index + 1 });
    }
  });
  return found;
}

/** The relative Markdown link targets of `text` (not URLs, not in-page anchors), with their lines. */
function linkTargets(text: string): { target: string; anchor?: string; line: number }[] {
  const found: { target: string; anchor?: string; line: number }[] = [];
  text.split('\n').forEach((content, index) => {
    const targets = [
      ...[...content.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!),
      ...[...content.matchAll(/^\[[^\]]+\]:\s+(\S+)/g)].map((m) => m[1]!),
    ];
    for (const link of targets) {
      if (/^[a-z]+:/i.test(link) || link.startsWith('#')) continue;
      const [target = '', anchor] = link.split('#');
      found.push({ target, anchor, line: index + 1 });
    }
  });
  return found;
}

/** GitHub's anchor for each heading of a Markdown page (a repeated heading gets -1, -2, …). */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '');
  for (const [, heading = ''] of prose.matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
    seen.set(slug, count + 1);
  }
  return anchors;
}

describe('paths the documentation names', () => {
  const docs = documents();

  test('the documents are found, and the journal is left out', () => {
    const folderReadmes = ['testkit', 'tools'].map((folder) => join(folder, 'README.md'));
    for (const doc of ['README.md', 'docs/architecture.md', 'docs/configuration.md', ...folderReadmes]) {
      assert.ok(docs.includes(doc), `${doc} is read`);
    }
    assert.ok(existsSync(join(PROJECT_ROOT, JOURNAL, 'README.md')), `${JOURNAL}/README.md exists`);
    assert.deepEqual(
      docs.filter((doc) => doc.startsWith(`${JOURNAL}/`) || doc.startsWith('docs/journal/')),
      [],
    );
  });

  test('every repository path a document mentions exists', () => {
    const missing: string[] = [];
    const ignored = written();
    const isWritten = (path: string) =>
      ignored.some((entry) => path === entry || path.startsWith(`${entry}/`));
    let checked = 0;
    for (const doc of docs) {
      for (const { path, line } of mentionedPaths(readFileSync(join(PROJECT_ROOT, doc), 'utf8'))) {
        checked += 1;
        if (!isWritten(path) && !existsSync(join(PROJECT_ROOT, path)))
          missing.push(`${doc}:${line}: ${path}`);
      }
    }
    assert.ok(checked > 100, `only ${checked} paths found: is the pattern still right?`);
    assert.deepEqual(missing, [], 'named in the documentation but not in the repository');
  });

  test('every relative link lands on a file, and a link to a heading on that heading', () => {
    const broken: string[] = [];
    for (const doc of docs) {
      const text = readFileSync(join(PROJECT_ROOT, doc), 'utf8');
      for (const { target, anchor, line } of linkTargets(text)) {
        const path = target === '' ? doc : relative(PROJECT_ROOT, join(PROJECT_ROOT, dirname(doc), target));
        const where = `${doc}:${line}: ${target}${anchor === undefined ? '' : `#${anchor}`}`;
        if (!existsSync(join(PROJECT_ROOT, path))) broken.push(`${where} (no ${path})`);
        else if (anchor !== undefined && path.endsWith('.md')) {
          const anchors = anchorsOf(readFileSync(join(PROJECT_ROOT, path), 'utf8'));
          if (!anchors.has(anchor)) broken.push(`${where} (no such heading in ${path})`);
        }
      }
    }
    assert.deepEqual(broken, [], 'links that lead nowhere');
  });

  test('a path that does not exist is reported, a placeholder is not', () => {
    const found = mentionedPaths(
      'See `src/nowhere.ts`, testkit/stack.ts. Or `deploy/images/<name>/`, ' +
        'test/*.test.ts, https://example.com/docs/x and docs/{page}.md.',
    ).map((mention) => mention.path);
    assert.deepEqual(found, ['src/nowhere.ts', 'testkit/stack.ts']);
    assert.equal(existsSync(join(PROJECT_ROOT, found[0]!)), false);
    assert.ok(
      anchorsOf("# A title\n## Issue 12's goals: two runs (1 Dec)\n").has('issue-12s-goals-two-runs-1-dec'),
    );
  });
});
