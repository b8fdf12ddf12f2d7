// Each workflow's behaviour under Worker Deployments, attached to the functions exported below.
import './versioning-behaviors';
export { paymentWorkflow, reconciledQuery } from './payment';
export { purgeClaimsWorkflow } from './purge';
export { recoverySweepWorkflow } from './recovery-sweep';
export type { PaymentWorkflowInput, PaymentWorkflowResult } from './payment';
export { cancelReminderSignal, reminderWorkflow } from './reminder';
export type { ReminderWorkflowInput, ReminderWorkflowResult } from './reminder';
