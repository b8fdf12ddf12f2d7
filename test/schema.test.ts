/**
 * The schema after all migrations, checked in (test/fixtures/schema.sql), so a migration's effect is
 * reviewable in its diff. After a deliberate schema change, write the file anew:
 *   SETTLE_UPDATE_SCHEMA=1 npm test -- schema
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { migrate } from '../src/db/migrate';
import { createTestDatabase } from '../tools/harness/harness';
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
});
