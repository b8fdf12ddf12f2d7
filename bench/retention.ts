import { randomBytes } from 'node:crypto';
import { purgeExpiredClaims } from '../src/db/purge';
import { round } from '../proof/processes';
import type { ProofStack } from '../proof/stack';
import { relationSizes } from './bytes';
import { benchFixedLoad, loadEvents, preparePathEvents } from './full-path';

/** settle's default SETTLE_CLAIM_RETENTION. */
const RETENTION_MS = 90 * 24 * 3_600_000;
const CYCLES = 5;

/**
 * Fills the claim store with `count` claims (and their events rows) past the retention, in SQL
 * (generate_series), as 100-day-old applied events: what `settle purge` finds after a quiet quarter.
 */
async function fillPastRetention(stack: ProofStack, count: number): Promise<void> {
  const prefix = `ret-${randomBytes(3).toString('hex')}`;
  await stack.pool.query(
    `INSERT INTO events (event_id, type, payload, payload_sha256, workflow_id, source, received_at)
     SELECT $1 || '-' || g, 'payment.settled',
            jsonb_build_object('id', $1 || '-' || g, 'type', 'payment.settled',
              'created_at', '2026-08-10T02:14:00Z',
              'data', jsonb_build_object('shipment_id', 'SHP-RET-' || g, 'payment_id', 'pi_ret_' || g,
                                         'amount', 12500, 'currency', 'EUR')),
            md5(g::text) || md5($1 || g), 'payment:' || $1 || '-' || g, 'webhook', now() - interval '100 days'
       FROM generate_series(1, $2::int) g`,
    [prefix, count],
  );
  await stack.pool.query(
    `INSERT INTO claims (event_id, payload_sha256, outcome, shipment_id, claimed_at, updated_at)
     SELECT $1 || '-' || g, md5(g::text) || md5($1 || g), 'applied', 'SHP-RET-' || g,
            now() - interval '100 days', now() - interval '100 days'
       FROM generate_series(1, $2::int) g`,
    [prefix, count],
  );
}

const claimStoreBytes = async (stack: ProofStack) => {
  const sizes = await relationSizes(stack.pool);
  return (sizes['table:claims'] ?? 0) + (sizes['table:events'] ?? 0);
};

/**
 * RT: retention at volume. Live webhooks at `ratePerSecond` for `durationMs`, idle; then `count`
 * past-retention claims generated in SQL and purged (src/db/purge.ts, what `settle purge` runs) while
 * the same live load flows: the live delivered p99 of both windows and the purge's rows per second.
 * Then four more fill-and-purge cycles without live load: the claim store's size (claims + events,
 * with indexes) after the first and the last. Goals (issue 21): p99 during ≤ 1.5 × idle; size after
 * five cycles ≤ 1.2 × after the first.
 */
export async function benchRetention(
  stack: ProofStack,
  count: number,
  ratePerSecond: number,
  durationMs: number,
): Promise<Record<string, number>> {
  const idleEvents = await preparePathEvents(stack, loadEvents(ratePerSecond, durationMs));
  const liveEvents = await preparePathEvents(stack, loadEvents(ratePerSecond, durationMs));
  const idle = await benchFixedLoad(stack, ratePerSecond, durationMs, idleEvents);
  const before = await claimStoreBytes(stack);
  await fillPastRetention(stack, count);
  const filled = await claimStoreBytes(stack);

  const purgeStarted = Date.now();
  const purging = purgeExpiredClaims(stack.pool, RETENTION_MS).then((result) => ({
    ...result,
    ms: Date.now() - purgeStarted,
  }));
  const live = await benchFixedLoad(stack, ratePerSecond, durationMs, liveEvents);
  const purged = await purging;
  const afterFirst = await claimStoreBytes(stack);

  for (let cycle = 2; cycle <= CYCLES; cycle += 1) {
    await fillPastRetention(stack, count);
    await purgeExpiredClaims(stack.pool, RETENTION_MS);
  }
  const afterLast = await claimStoreBytes(stack);
  const mb = (bytes: number) => round(bytes / 1024 ** 2, 1);
  return {
    pastRetentionClaims: count,
    offeredPerSecond: ratePerSecond,
    sent: idle.sent + live.sent,
    errors: idle.errors + live.errors,
    idleDeliveredP99Ms: idle.deliveredP99Ms,
    purgingDeliveredP99Ms: live.deliveredP99Ms,
    purgedClaims: purged.claims,
    purgeMs: purged.ms,
    purgeRowsPerSecond: round(((purged.claims + purged.events) * 1000) / Math.max(purged.ms, 1), 0),
    claimStoreMbBefore: mb(before),
    claimStoreMbFilled: mb(filled),
    claimStoreMbAfterFirstCycle: mb(afterFirst),
    claimStoreMbAfterFiveCycles: mb(afterLast),
  };
}
