import { ScheduleAlreadyRunning, type Client } from '@temporalio/client';
import type { Config } from '../config';
import { formatDuration } from '../domain/duration';
import type { Logger } from '../lib/logger';
import type { purgeClaimsWorkflow } from '../workflows';
import { prepareRecovery, type RecoveryScheduleConfig } from './recovery-schedule';

/** One Schedule per deployment (task queue); every worker and `settle start` ensures the same one. */
export function purgeScheduleId(taskQueue: string): string {
  return `settle-purge-claims:${taskQueue}`;
}

/**
 * Creates the daily purge Schedule unless it exists: several processes starting at once all
 * succeed, and exactly one Schedule remains. Runs at 03:17 UTC; a missed run is caught up within a
 * day, and a run still going when the next is due makes the next one skip.
 */
async function ensurePurgeSchedule(
  client: Client,
  taskQueue: string,
): Promise<{ scheduleId: string; created: boolean }> {
  const scheduleId = purgeScheduleId(taskQueue);
  try {
    await client.schedule.create<typeof purgeClaimsWorkflow>({
      scheduleId,
      spec: { calendars: [{ hour: 3, minute: 17, comment: 'daily claim purge' }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'purgeClaimsWorkflow',
        workflowId: scheduleId,
        taskQueue,
        args: [],
      },
      policies: { overlap: 'SKIP', catchupWindow: '1 day' },
    });
    return { scheduleId, created: true };
  } catch (error) {
    if (error instanceof ScheduleAlreadyRunning) return { scheduleId, created: false };
    throw error;
  }
}

export type RetentionCheck = {
  claimRetentionMs: number;
  namespaceRetentionMs: number | null;
  /** False when claims would be dropped while Temporal still remembers the workflow IDs, or sooner. */
  ok: boolean;
};

/** Compares SETTLE_CLAIM_RETENTION with the namespace's retention: the claim must outlive it. */
export async function checkRetention(
  client: Client,
  config: Pick<Config, 'temporalNamespace' | 'claimRetentionMs'>,
): Promise<RetentionCheck> {
  const description = await client.workflowService.describeNamespace({ namespace: config.temporalNamespace });
  const ttl = description.config?.workflowExecutionRetentionTtl;
  const namespaceRetentionMs = ttl
    ? Number(ttl.seconds ?? 0) * 1000 + Math.floor((ttl.nanos ?? 0) / 1e6)
    : null;
  return {
    claimRetentionMs: config.claimRetentionMs,
    namespaceRetentionMs,
    ok: namespaceRetentionMs === null || config.claimRetentionMs > namespaceRetentionMs,
  };
}

/**
 * At start: ensure the Schedules (the purge, and the recovery sweep's when a provider API key is
 * set) and warn about a claim retention that is too short. Never fatal.
 */
export async function prepareRetention(
  client: Client,
  config: Pick<Config, 'temporalNamespace' | 'claimRetentionMs' | 'taskQueue'> & RecoveryScheduleConfig,
  logger: Logger,
): Promise<void> {
  await prepareRecovery(client, config, logger);
  try {
    const schedule = await ensurePurgeSchedule(client, config.taskQueue);
    logger.info({ component: 'retention', ...schedule }, 'claim purge schedule ready');
    const check = await checkRetention(client, config);
    if (!check.ok) {
      logger.warn(
        {
          component: 'retention',
          claimRetention: formatDuration(check.claimRetentionMs),
          namespaceRetention: formatDuration(check.namespaceRetentionMs ?? 0),
        },
        'SETTLE_CLAIM_RETENTION is not longer than the Temporal namespace retention: claims would be dropped ' +
          'while Temporal still remembers the workflow IDs; raise SETTLE_CLAIM_RETENTION past the provider replay horizon',
      );
    }
  } catch (error) {
    logger.warn(
      { component: 'retention', err: error instanceof Error ? error.message : String(error) },
      'could not prepare the claim purge schedule; the next start tries again',
    );
  }
}
