import { setWorkflowOptions, sleep } from '@temporalio/workflow';
import { paymentWorkflow as releasedPaymentWorkflow } from '../src/workflows';
import { versioningBehavior } from '../src/workflows/versioning-behaviors';
import type { PaymentWorkflowInput } from '../src/workflows';

export {
  cancelReminderSignal,
  purgeClaimsWorkflow,
  reconciledQuery,
  recoverySweepWorkflow,
  reminderWorkflow,
} from '../src/workflows';

/**
 * The next build's payment workflow (test/worker-deployments.test.ts): a timer before the released
 * code's first step, a change no released history would replay (its first command was the reconcile's
 * marker), shipped without `patched()` because payment runs are pinned to the build that started them.
 * The timer also marks a run this build started: its history holds a TimerStarted.
 */
export async function paymentWorkflow(input: PaymentWorkflowInput) {
  await sleep('1 millisecond');
  return releasedPaymentWorkflow(input);
}
setWorkflowOptions(versioningBehavior('PINNED'), paymentWorkflow);
