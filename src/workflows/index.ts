export { paymentWorkflow } from './payment';
export { purgeClaimsWorkflow } from './purge';
export type { PaymentWorkflowInput, PaymentWorkflowResult } from './payment';
