import type { VersioningBehavior } from '@temporalio/common';
import { setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
import { paymentWorkflow } from './payment';
import { purgeClaimsWorkflow } from './purge';
import { recoverySweepWorkflow } from './recovery-sweep';
import { reminderWorkflow } from './reminder';

/**
 * How each workflow follows a rollout once its workers join a Worker Deployment (SETTLE_BUILD_ID;
 * docs/architecture.md, "Versions of the workflow code"). Unversioned workers ignore it.
 *
 * - PINNED: the run finishes on the build that started it, so a change to its code needs no
 *   `patched()`. For runs that are short: a payment (seconds, hours while a carrier's Retry-After
 *   holds a delivery) and a recovery sweep (an hour at most). An old build serves them until they close.
 * - AUTO_UPGRADE: the run moves to the current build at its next workflow task, so a change to its
 *   code still goes behind `patched()`. For runs that would keep an old build alive too long: a
 *   reminder sleeps until its due date (months), and a purge's one activity may run most of a day.
 */
export const VERSIONING_BEHAVIORS = {
  paymentWorkflow: 'PINNED',
  recoverySweepWorkflow: 'PINNED',
  reminderWorkflow: 'AUTO_UPGRADE',
  purgeClaimsWorkflow: 'AUTO_UPGRADE',
} as const satisfies Record<string, VersioningBehavior>;

/**
 * A behaviour only for a versioned worker: Temporal refuses a workflow task that names one from a
 * worker outside a Worker Deployment (SETTLE_BUILD_ID unset), so an unversioned run declares none.
 */
export function versioningBehavior(behavior: VersioningBehavior) {
  // An unversioned worker still reports a build (the SDK's checksum of the bundle), in no deployment.
  return () =>
    workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: behavior } : {};
}

setWorkflowOptions(versioningBehavior(VERSIONING_BEHAVIORS.paymentWorkflow), paymentWorkflow);
setWorkflowOptions(versioningBehavior(VERSIONING_BEHAVIORS.recoverySweepWorkflow), recoverySweepWorkflow);
setWorkflowOptions(versioningBehavior(VERSIONING_BEHAVIORS.reminderWorkflow), reminderWorkflow);
setWorkflowOptions(versioningBehavior(VERSIONING_BEHAVIORS.purgeClaimsWorkflow), purgeClaimsWorkflow);
