import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { noopActivities } from './noop-activities';

const { noop } = proxyActivities<typeof noopActivities>({ startToCloseTimeout: '30 seconds' });
const local = proxyLocalActivities<typeof noopActivities>({ startToCloseTimeout: '30 seconds' });

/** T0, the Temporal floor: one workflow that runs one activity that does nothing. */
export async function noopWorkflow(): Promise<void> {
  await noop();
}

/** T3, the floor with P's shape: three activities in sequence (reconcile, carrier, ERP), all no-ops. */
export async function threeActivitiesWorkflow(): Promise<void> {
  for (let i = 0; i < 3; i += 1) await noop();
}

/** T3L: the same three steps as local activities, run inside the workflow task (no activity tasks). */
export async function threeLocalActivitiesWorkflow(): Promise<void> {
  for (let i = 0; i < 3; i += 1) await local.noop();
}
