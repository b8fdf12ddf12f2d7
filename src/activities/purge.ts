import { Context } from '@temporalio/activity';
import type pg from 'pg';
import { purgeExpiredClaims } from '../db/purge';
import type { PurgeResult } from '../domain/workflow-contracts';
import { logger } from '../lib/logger';
import { purgedClaimsTotal } from '../metrics/settle-metrics';
import { untilDrained } from '../lib/shutdown';

/** Well inside the workflow's heartbeat timeout (src/workflows/purge.ts). */
const HEARTBEAT_EVERY_MS = 20_000;

/**
 * The daily purge, run by the purge Schedule. The worker's own SETTLE_CLAIM_RETENTION decides the
 * cutoff, so changing it needs no change to the Schedule. Safe to retry: a second run finds less.
 */
export function createPurgeActivities({
  pool,
  claimRetentionMs,
}: {
  pool: pg.Pool;
  claimRetentionMs: number;
}) {
  return {
    async purgeClaimsPastRetention(): Promise<PurgeResult> {
      const context = Context.current();
      // Heartbeats carry the progress: after every batch, and on a clock while one statement (the
      // VACUUM at the end) runs longer than the heartbeat timeout; the SDK throttles them. A
      // cancelled or timed-out attempt stops before its next batch.
      let progress = { claims: 0, events: 0 };
      const beat = setInterval(() => context.heartbeat(progress), HEARTBEAT_EVERY_MS);
      let result: Awaited<ReturnType<typeof purgeExpiredClaims>>;
      try {
        result = await purgeExpiredClaims(pool, claimRetentionMs, {
          onBatch: (done) => {
            progress = done;
            context.heartbeat(progress);
          },
          signal: untilDrained(context.cancellationSignal),
        });
      } finally {
        clearInterval(beat);
      }
      purgedClaimsTotal.inc(result.claims);
      logger.info(
        {
          component: 'retention',
          claims: result.claims,
          events: result.events,
          providerExceptions: result.providerExceptions,
          keptExceptions: result.keptExceptions,
        },
        'expired claims purged',
      );
      return {
        cutoff: result.cutoff,
        claims: result.claims,
        events: result.events,
        conflicts: result.conflicts,
        providerExceptions: result.providerExceptions,
        keptExceptions: result.keptExceptions,
        dryRun: result.dryRun,
      };
    },
  };
}

export type PurgeActivities = ReturnType<typeof createPurgeActivities>;
