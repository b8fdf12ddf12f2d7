import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { countActions, type History } from '../../testkit/actions';
import { round } from '../../testkit/processes';

/**
 * Temporal Cloud's list price per million actions, Pay-As-You-Go (docs.temporal.io/cloud/pricing);
 * volume tiers go lower.
 */
export const USD_PER_MILLION_ACTIONS = 50;

const GRPC_NOT_FOUND = 5;

/** How many of a row's runs have their histories read: enough for an exact mean of uniform runs. */
const SAMPLE = 20;

/**
 * Billable actions per event of a row, counted from the histories of (up to SAMPLE of) its runs by
 * Temporal's published rules (testkit/actions.ts). `since` counts only runs started at or after it:
 * a redelivered duplicate that started nothing costs 0. Read after the row's resources are sampled.
 */
export async function actionsPerEvent(
  client: Client,
  workflowIds: string[],
  options: { since?: Date } = {},
): Promise<{ actionsPerEvent: number; usdPerMillionEvents: number }> {
  const step = Math.max(1, Math.floor(workflowIds.length / SAMPLE));
  const sample = workflowIds.filter((_, i) => i % step === 0).slice(0, SAMPLE);
  let total = 0;
  let counted = 0;
  for (const workflowId of sample) {
    const handle = client.workflow.getHandle(workflowId);
    try {
      counted += 1;
      if (options.since && (await handle.describe()).startTime < options.since) continue;
      total += countActions((await handle.fetchHistory()) as unknown as History).total;
    } catch (error) {
      // An event the gateway refused (the row counts it in `errors`) started no run.
      const notFound =
        error instanceof WorkflowNotFoundError || (error as { code?: unknown }).code === GRPC_NOT_FOUND;
      if (!notFound) throw error;
      counted -= 1;
    }
  }
  const perEvent = counted ? total / counted : 0;
  return {
    actionsPerEvent: round(perEvent, 2),
    usdPerMillionEvents: round(perEvent * USD_PER_MILLION_ACTIONS, 0),
  };
}
