import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { subjectOfWorkflowId } from '../src/domain/ids';

/** Runs after a reconcile attempt committed and before it reports completion; a throw loses the completion. */
export type AfterCommit = (eventId: string, attempt: number) => void | Promise<void>;

/**
 * A fault-injection seam for tests, benchmarks and the history recorder, passed to createWorker as an
 * activity interceptor: `afterCommit` runs once `reconcilePayment` or the first pass that ran it
 * (`reconcileAndDeliver`, its first deliveries made too) has returned: its transaction has committed,
 * local attempts included, as a worker that crashes or hangs before completing would.
 */
const RECONCILES = new Set(['reconcilePayment', 'reconcileAndDeliver']);

export function afterReconcileCommit(afterCommit: AfterCommit): ActivityInterceptorsFactory {
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const result = await next(input);
        const { activityType, attempt, workflowExecution } = ctx.info;
        const eventId = workflowExecution && subjectOfWorkflowId(workflowExecution.workflowId);
        if (RECONCILES.has(activityType) && eventId) await afterCommit(eventId, attempt);
        return result;
      },
    },
  });
}
