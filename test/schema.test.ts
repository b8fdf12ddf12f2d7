/**
 * The schema after all migrations, checked in (test/fixtures/schema.sql), so a migration's effect is
 * reviewable in its diff. After a deliberate schema change, write the file anew:
 *   SETTLE_UPDATE_SCHEMA=1 npm test -- schema
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CONTRACT_MIGRATIONS, migrate } from '../src/db/migrate';
import { createTestDatabase } from '../testkit/harness';
import { PREVIOUS_RELEASE } from './support/previous-release';
import { dumpSchema } from './support/schema-dump';

const SNAPSHOT = join(__dirname, 'fixtures', 'schema.sql');

describe('the database schema', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  before(async () => {
    db = await createTestDatabase();
  });
  after(async () => {
    await db.drop();
  });

  test('after all migrations is the checked-in snapshot', async () => {
    const schema = await dumpSchema(db.pool);
    if (process.env.SETTLE_UPDATE_SCHEMA === '1') writeFileSync(SNAPSHOT, schema);
    const expected = readFileSync(SNAPSHOT, 'utf8');
    assert.equal(
      schema,
      expected,
      'the schema differs from test/fixtures/schema.sql: if the change is meant, run ' +
        '`SETTLE_UPDATE_SCHEMA=1 npm test -- schema` and commit the file',
    );
  });

  test('a database migrated before a list changed gets the CHECK written from the list', async () => {
    // As a database whose outbox knew one target only: the migrator writes the table's list again.
    await db.pool.query(`ALTER TABLE outbox DROP CONSTRAINT outbox_target_check`);
    await db.pool.query(
      `ALTER TABLE outbox ADD CONSTRAINT outbox_target_check CHECK (target IN ('carrier'))`,
    );
    const again = await migrate(db.pool);
    assert.deepEqual(again.applied, []);
    assert.equal(await dumpSchema(db.pool), readFileSync(SNAPSHOT, 'utf8'));
  });

  test("a value settle's list dropped stays allowed until the contract step", async () => {
    // As a list of the previous release that had one more outcome, which its workers may still write.
    const { rows } = await db.pool.query<{ definition: string }>(
      `SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint
        WHERE conname = 'claims_outcome_check' AND conrelid = 'claims'::regclass`,
    );
    await db.pool.query(`ALTER TABLE claims DROP CONSTRAINT claims_outcome_check`);
    await db.pool.query(
      `ALTER TABLE claims ADD CONSTRAINT claims_outcome_check ${rows[0]!.definition.replace(/\](?=\)+$)/, ", 'retired'::text]")}`,
    );
    await migrate(db.pool);
    const widened = await db.pool.query<{ definition: string }>(
      `SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint
        WHERE conname = 'claims_outcome_check' AND conrelid = 'claims'::regclass`,
    );
    assert.match(widened.rows[0]!.definition, /'retired'::text/);
    await migrate(db.pool, { contract: true });
    assert.equal(await dumpSchema(db.pool), readFileSync(SNAPSHOT, 'utf8'));
  });
});

describe('a database upgraded from the previous release', () => {
  test('expand, then contract, ends at the checked-in snapshot', async () => {
    const upgraded = await createTestDatabase({ through: PREVIOUS_RELEASE.lastMigration });
    try {
      const expand = await migrate(upgraded.pool);
      assert.deepEqual(
        expand.heldBack,
        Object.keys(CONTRACT_MIGRATIONS).filter((name) => name > PREVIOUS_RELEASE.lastMigration),
      );
      const contract = await migrate(upgraded.pool, { contract: true });
      assert.deepEqual(contract.applied, expand.heldBack);
      assert.equal(
        await dumpSchema(upgraded.pool),
        readFileSync(SNAPSHOT, 'utf8'),
        'a migration after a contract one depends on the order they ran in: an upgraded database ' +
          'ran it before the contract migration, a new one after',
      );
    } finally {
      await upgraded.drop();
    }
  });
});
