import { proxyActivities } from '@temporalio/workflow';
import type { PurgeActivities } from '../activities/purge';
import type { PurgeResult } from '../domain/workflow-contracts';

/**
 * A day's deletes grow with the volume (at high rates they take tens of minutes), so no attempt is
 * cut off at a fixed length: the activity heartbeats its progress, a worker that dies is noticed
 * within the heartbeat timeout, and the retries continue where the committed batches stopped, until the next day's purge is due (the
 * Schedule skips a run while one is still going).
 */
const { purgeClaimsPastRetention } = proxyActivities<PurgeActivities>({
  heartbeatTimeout: '2 minutes',
  startToCloseTimeout: '23 hours',
  retry: { initialInterval: '10 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes' },
  scheduleToCloseTimeout: '23 hours',
});

/** Started daily by the purge Schedule (ID `settle-purge-claims:<task queue>`). */
export async function purgeClaimsWorkflow(): Promise<PurgeResult> {
  return purgeClaimsPastRetention();
}
