import { proxyActivities } from '@temporalio/workflow';
import type { noopActivities } from './noop-activities';

const { noop } = proxyActivities<typeof noopActivities>({ startToCloseTimeout: '30 seconds' });

/** T0, the Temporal floor: one workflow that runs one activity that does nothing. */
export async function noopWorkflow(): Promise<void> {
  await noop();
}
