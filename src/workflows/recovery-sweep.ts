import { proxyActivities } from '@temporalio/workflow';
import type {
  RecoveryActivities,
  RecoverySweepInput,
  RecoverySweepResult,
} from '../domain/workflow-contracts';

/**
 * One sweep lists what arrived since the last one, so it is short; a provider rate-limiting
 * (Retry-After honoured) or down, or a worker that dies, is retried with backoff, and each attempt
 * resumes from the durable cursor. The Schedule skips a run while one is still going, and an hour
 * bounds a run so the next one starts afresh. A refused API key is not retried: the run fails
 * naming it, and the next scheduled run tries again.
 */
const { sweepProviderEvents } = proxyActivities<RecoveryActivities>({
  heartbeatTimeout: '1 minute',
  startToCloseTimeout: '1 hour',
  scheduleToCloseTimeout: '1 hour',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '5 minutes',
    nonRetryableErrorTypes: ['provider_auth_refused', 'provider_refused'],
  },
});

/** Started every SETTLE_<PROVIDER>_SWEEP_EVERY by the provider's recovery Schedule (ID `settle-recovery-sweep:<provider>:<task queue>`). */
export async function recoverySweepWorkflow(input: RecoverySweepInput): Promise<RecoverySweepResult> {
  return sweepProviderEvents(input);
}
