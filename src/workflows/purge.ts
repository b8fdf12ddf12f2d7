import { proxyActivities } from '@temporalio/workflow';
import type { PurgeActivities } from '../activities/purge-claims';
import type { PurgeResult } from './contracts';

/** A purge that keeps failing is retried for an hour; the next day's run starts over anyway. */
const { purgeClaimsPastRetention } = proxyActivities<PurgeActivities>({
  startToCloseTimeout: '15 minutes',
  retry: { initialInterval: '10 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes' },
  scheduleToCloseTimeout: '1 hour',
});

/** Started daily by the purge Schedule (ID `settle-purge-claims:<task queue>`). */
export async function purgeClaimsWorkflow(): Promise<PurgeResult> {
  return purgeClaimsPastRetention();
}
