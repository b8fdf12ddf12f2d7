import type { Context } from '@temporalio/activity';
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
  Next,
} from '@temporalio/worker';
import { observeAttempt } from '../activities/observe';

/**
 * One JSON log line per activity attempt and `settle_activity_outcomes_total` (activities/observe.ts).
 * Observes only: it reads nothing, writes nothing, and passes results and errors through unchanged.
 * What one activity must record (reconcile's figures) it records itself.
 */
export const activityOutcomeInterceptor: ActivityInterceptorsFactory = (ctx) => ({
  inbound: new ActivityOutcomeInterceptor(ctx),
});

class ActivityOutcomeInterceptor implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: Context) {}

  execute(
    input: ActivityExecuteInput,
    next: Next<ActivityInboundCallsInterceptor, 'execute'>,
  ): Promise<unknown> {
    // The first pass logs each of its steps under the step's own name; a line for the whole would
    // only repeat them (its failure is still logged, and every outcome counted).
    const logCompletion = this.ctx.info.activityType !== 'reconcileAndDeliver';
    return observeAttempt(this.ctx.info, () => next(input), { logCompletion });
  }
}
