import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../src/activities';

const { reconcilePayment } = proxyActivities<Activities>({ startToCloseTimeout: '30 seconds' });

/**
 * The payment workflow with a change that breaks determinism (a timer before the activity): the
 * replay test proves that recorded histories catch it.
 */
export async function paymentWorkflow(
  input: Parameters<Activities['reconcilePayment']>[0] extends infer E ? { event: E } : never,
) {
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  return reconcilePayment(input.event);
}
