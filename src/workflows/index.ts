export { paymentWorkflow } from './payment';
export type { PaymentWorkflowInput, PaymentWorkflowResult } from './payment';
