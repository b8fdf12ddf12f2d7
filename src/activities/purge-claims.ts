import type pg from 'pg';
import { purgeExpiredClaims } from '../db/purge';
import type { PurgeResult } from '../workflows/contracts';
import { logger } from '../lib/logger';
import { purgedClaimsTotal } from '../metrics/settle-metrics';

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
      const result = await purgeExpiredClaims(pool, claimRetentionMs);
      purgedClaimsTotal.inc(result.claims);
      logger.info(
        {
          component: 'retention',
          claims: result.claims,
          events: result.events,
          keptExceptions: result.keptExceptions,
        },
        'expired claims purged',
      );
      return {
        cutoff: result.cutoff,
        claims: result.claims,
        events: result.events,
        conflicts: result.conflicts,
        keptExceptions: result.keptExceptions,
        dryRun: result.dryRun,
      };
    },
  };
}

export type PurgeActivities = ReturnType<typeof createPurgeActivities>;
