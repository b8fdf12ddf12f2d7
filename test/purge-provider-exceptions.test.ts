/**
 * Provider exceptions hold the raw provider item settle could not apply (an Adyen item, a Stripe
 * event naming no shipment): customers' emails, billing addresses. They go with the retention, as the
 * stored events do, by `settle purge` and by the daily purge Schedule's activity alike.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createPurgeActivities } from '../src/activities/purge';
import { recordProviderException } from '../src/db/provider-exceptions';
import { purgeExpiredClaims } from '../src/db/purge';
import { takeTransmission } from '../src/db/transmissions';
import type { PurgeResult } from '../src/domain/workflow-contracts';
import { useTestDatabase } from '../testkit/hooks';

const RETENTION_MS = 90 * 24 * 3_600_000;

const db = useTestDatabase();

/** Records a provider exception through settle's own path, first and last seen `days` ago. */
async function exceptionSeen(eventId: string, days: { first: number; last: number }): Promise<void> {
  await recordProviderException(db.pool, {
    eventId,
    provider: 'adyen',
    providerType: 'AUTHORISATION',
    reason: 'names no shipment',
    payload: { shopperEmail: 'jane@example.com', billingAddress: { street: 'Main St 1' } },
  });
  await db.pool.query(
    `UPDATE provider_exceptions
        SET first_seen_at = now() - ($2::int * interval '1 day'), last_seen_at = now() - ($3::int * interval '1 day')
      WHERE event_id = $1::text`,
    [eventId, days.first, days.last],
  );
}

async function remaining(): Promise<string[]> {
  const { rows } = await db.pool.query<{ event_id: string }>(
    'SELECT event_id FROM provider_exceptions ORDER BY event_id',
  );
  return rows.map((row) => row.event_id);
}

test('settle purge drops provider exceptions last seen before the cutoff, and only those', async () => {
  await exceptionSeen('pe-old-120', { first: 120, last: 120 });
  await exceptionSeen('pe-old-91', { first: 95, last: 91 });
  // Delivered again since: its last delivery is inside the retention.
  await exceptionSeen('pe-redelivered', { first: 200, last: 10 });
  await exceptionSeen('pe-young', { first: 1, last: 1 });

  const dry = await purgeExpiredClaims(db.pool, RETENTION_MS, { dryRun: true });
  assert.equal(dry.providerExceptions, 2);
  assert.equal((await remaining()).length, 4, 'a dry run drops nothing');

  const purged = await purgeExpiredClaims(db.pool, RETENTION_MS);
  assert.equal(purged.providerExceptions, 2);
  assert.deepEqual(await remaining(), ['pe-redelivered', 'pe-young']);
});

test('the daily purge activity drops them with the worker retention and reports how many', async () => {
  await exceptionSeen('pe-daily-100', { first: 100, last: 100 });
  const activities = createPurgeActivities({ pool: db.pool, claimRetentionMs: RETENTION_MS });
  const result: PurgeResult = await new MockActivityEnvironment().run(activities.purgeClaimsPastRetention);
  assert.equal(result.providerExceptions, 1);
  assert.ok(!(await remaining()).includes('pe-daily-100'));
  assert.ok((await remaining()).includes('pe-young'));
});

test('transmission IDs taken once (PayPal’s) go with the same retention', async () => {
  for (const [id, days] of [
    ['tx-old-95', 95],
    ['tx-young-1', 1],
  ] as const) {
    assert.equal(
      await takeTransmission(db.pool, { provider: 'paypal', transmissionId: id, bodySha256: 'a'.repeat(64) }),
      'first',
    );
    await db.pool.query(
      `UPDATE provider_transmissions SET first_seen_at = now() - ($2::int * interval '1 day')
        WHERE transmission_id = $1::text`,
      [id, days],
    );
  }
  const taken = async () =>
    (
      await db.pool.query<{ id: string }>(
        'SELECT transmission_id AS id FROM provider_transmissions ORDER BY 1',
      )
    ).rows.map((row) => row.id);
  await purgeExpiredClaims(db.pool, RETENTION_MS, { dryRun: true });
  assert.deepEqual(await taken(), ['tx-old-95', 'tx-young-1'], 'a dry run drops nothing');
  await purgeExpiredClaims(db.pool, RETENTION_MS);
  assert.deepEqual(await taken(), ['tx-young-1']);
  // A transmission kept is still refused with another body.
  assert.equal(
    await takeTransmission(db.pool, {
      provider: 'paypal',
      transmissionId: 'tx-young-1',
      bodySha256: 'b'.repeat(64),
    }),
    'other',
  );
});
