/**
 * The parts of a payment run's shape, one at a time, for tools/bench/run-shape-cost.ts: what each
 * costs the Temporal server with no settle code around it. None reads its input or does any work.
 */
import { patched, proxyLocalActivities, upsertSearchAttributes } from '@temporalio/workflow';
import { SettleDeliveryStateKey, SettleOutcomeKey } from '../../../src/workflows/search-attributes';
import type { runShapeActivities } from './run-shape-activities';

const { echo } = proxyLocalActivities<typeof runShapeActivities>({ startToCloseTimeout: '30 seconds' });

/** A payment run's closing upsert: its outcome and delivery state, one command. */
function closingUpsert(): void {
  upsertSearchAttributes([
    { key: SettleOutcomeKey, value: 'applied' },
    { key: SettleDeliveryStateKey, value: 'delivered' },
  ]);
}

/** Completes in its first workflow task, with no command but the completion. */
export async function emptyRun(): Promise<void> {}

/** The patch of the payment run's shape: a marker and the SDK's upsert of TemporalChangeVersion. */
export async function patchRun(): Promise<void> {
  patched('run-shape-cost');
}

export async function upsertRun(): Promise<void> {
  closingUpsert();
}

export async function patchAndUpsertRun(): Promise<void> {
  patched('run-shape-cost');
  closingUpsert();
}

/** One local activity (the first pass's place), its result the run's. */
export async function localActivityRun(input?: unknown): Promise<unknown> {
  return await echo(input);
}

/** T3L's run: three local activities in sequence, nothing else (tools/bench/support/noop-workflows.ts). */
export async function threeLocalActivitiesRun(): Promise<void> {
  for (let step = 0; step < 3; step += 1) await echo();
}

/** A happy payment run's shape: the patch, one local activity, the closing upsert, a result. */
export async function paymentShapedRun(input?: unknown): Promise<unknown> {
  patched('run-shape-cost');
  const result = await echo(input);
  closingUpsert();
  return result;
}
