/**
 * Expand, then contract (src/db/migrate.ts, CONTRACT_MIGRATIONS): a migration the previous release
 * does not have runs while that release's processes still do, so it must leave them working unless it
 * is marked contract. This check refuses the statements that break a running release whatever they
 * touch (a rename, a drop, a type change, a new NOT NULL without a default, partitioning an existing
 * table) in every migration after the previous release's last one that is not marked contract.
 * test/rolling-upgrade.test.ts runs the previous release's gateway and worker against the expanded
 * schema for what a statement's kind cannot tell.
 *
 * A flagged statement that is safe (it drops something the same file made) carries a comment
 * `-- expand-safe: <why>` on its line or the line above.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CONTRACT_MIGRATIONS, migrationFiles, migrationSql } from '../../src/db/migrate';
import {
  PREVIOUS_RELEASE,
  previousReleaseMigrations,
  previousReleaseUnavailable,
} from '../support/previous-release';

/** Statement kinds that break code written against the schema before them, each with why. */
const BREAKING: { pattern: RegExp; why: string }[] = [
  { pattern: /\bRENAME\b/gi, why: 'a rename: the running release still uses the old name' },
  {
    pattern: /\bDROP\s+(TABLE|COLUMN|VIEW|INDEX|CONSTRAINT|TYPE|SCHEMA|FUNCTION|TRIGGER|DEFAULT)\b/gi,
    why: 'a drop: the running release may read, write or rely on it (an index may be its ON CONFLICT arbiter)',
  },
  {
    pattern: /\bALTER\s+COLUMN\s+\w+\s+(SET\s+DATA\s+)?TYPE\b/gi,
    why: 'a type change the running release does not expect',
  },
  { pattern: /\bSET\s+NOT\s+NULL\b/gi, why: 'a new NOT NULL: the running release may write NULL there' },
  {
    pattern:
      /\bADD\s+COLUMN\s+(IF\s+NOT\s+EXISTS\s+)?\w+\s+(?:(?!\bDEFAULT\b)[^,;])*?\bNOT\s+NULL\b(?:(?!\bDEFAULT\b)[^,;])*[,;]/gi,
    why: "a NOT NULL column without a DEFAULT: the running release's INSERTs do not name it",
  },
  { pattern: /\b(ATTACH|DETACH)\s+PARTITION\b/gi, why: 'partitioning an existing table changes its keys' },
  { pattern: /\bTRUNCATE\b/gi, why: 'rows the running release needs' },
];

/** Each breaking statement of a migration's SQL not marked `-- expand-safe:`, as "line N: why". */
function breakingStatements(sql: string): string[] {
  // Comments blanked out (positions kept), so a word in a comment is never a statement.
  const code = sql.replace(/--[^\n]*/g, (comment) => ' '.repeat(comment.length));
  const lines = sql.split('\n');
  const found: string[] = [];
  for (const { pattern, why } of BREAKING) {
    for (const match of code.matchAll(pattern)) {
      const line = code.slice(0, match.index).split('\n').length;
      const marked = [lines[line - 1], lines[line - 2]].some((text) => text?.includes('-- expand-safe:'));
      if (!marked) found.push(`line ${line}: ${match[0].replace(/\s+/g, ' ').slice(0, 60)}: ${why}`);
    }
  }
  return found.sort();
}

describe('expand, then contract', () => {
  test('every migration after the previous release is expand-safe or marked contract', () => {
    const newer = migrationFiles().filter((name) => name > PREVIOUS_RELEASE.lastMigration);
    for (const name of newer) {
      if (name in CONTRACT_MIGRATIONS) continue;
      assert.deepEqual(
        breakingStatements(migrationSql(name)),
        [],
        `${name} would break the previous release's processes while they still run: make it expand ` +
          '(add beside, never rename or drop; docs/deployment.md, "Upgrades"), or list it in ' +
          'CONTRACT_MIGRATIONS (src/db/migrate.ts) with what it breaks',
      );
    }
  });

  test('the check refuses the known member: 017 unmarked would be refused', () => {
    const found = breakingStatements(migrationSql('017_claim_partitions.sql'));
    assert.ok(
      found.some((line) => line.includes('RENAME')),
      found.join('\n'),
    );
    assert.ok(
      found.some((line) => line.includes('ATTACH PARTITION')),
      found.join('\n'),
    );
  });

  test('additive statements pass, breaking ones are named with their line', () => {
    assert.deepEqual(
      breakingStatements(
        [
          'CREATE TABLE transmissions (id text PRIMARY KEY, body_sha256 text NOT NULL);',
          'ALTER TABLE claims ADD COLUMN run_id text;',
          'ALTER TABLE outbox ADD COLUMN priority int NOT NULL DEFAULT 0, ADD COLUMN note text;',
          'CREATE INDEX transmissions_seen ON transmissions (id);',
          '-- a comment may say DROP TABLE or RENAME',
          '-- expand-safe: made above in this file',
          'DROP INDEX transmissions_seen;',
        ].join('\n'),
      ),
      [],
    );
    assert.deepEqual(
      breakingStatements(
        [
          'ALTER TABLE events RENAME COLUMN payload TO body;',
          'ALTER TABLE claims DROP COLUMN shipment_id;',
          'ALTER TABLE outbox ADD COLUMN priority int NOT NULL;',
          'ALTER TABLE claims ALTER COLUMN outcome TYPE varchar(20);',
          'ALTER TABLE events ALTER COLUMN source SET NOT NULL;',
        ].join('\n'),
      ).map((line) => line.slice(0, 'line N'.length)),
      ['line 1', 'line 2', 'line 3', 'line 4', 'line 5'],
    );
  });

  test('CONTRACT_MIGRATIONS names existing files only', () => {
    const files = new Set(migrationFiles());
    for (const name of Object.keys(CONTRACT_MIGRATIONS)) assert.ok(files.has(name), name);
  });

  test("the previous release's last migration is the one its commit has", (t) => {
    const missing = previousReleaseUnavailable();
    if (missing) {
      t.skip(missing);
      return;
    }
    assert.equal(previousReleaseMigrations().at(-1), PREVIOUS_RELEASE.lastMigration);
  });
});
