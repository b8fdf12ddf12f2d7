import type { Context } from '@temporalio/activity';
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
  Next,
} from '@temporalio/worker';
import { errorCodeOf } from '../domain/errors';
import { subjectOfWorkflowId } from '../domain/ids';
import { shortHash } from '../lib/hash';
import { logger } from '../lib/logger';
import { redactIds } from '../temporal/redact-ids';
import { activityOutcomesTotal } from '../metrics/settle-metrics';

/**
 * One JSON log line per activity attempt (type, attempt, outcome, duration, and the event or reminder
 * delivery it works for, as a short hash of the ID its workflow ID carries) and
 * `settle_activity_outcomes_total`. Observes only: it reads nothing, writes nothing, and passes results
 * and errors through unchanged. What one activity must record (reconcile's figures) it records itself.
 */
export const activityOutcomeInterceptor: ActivityInterceptorsFactory = (ctx) => ({
  inbound: new ActivityOutcomeInterceptor(ctx),
});

class ActivityOutcomeInterceptor implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: Context) {}

  async execute(
    input: ActivityExecuteInput,
    next: Next<ActivityInboundCallsInterceptor, 'execute'>,
  ): Promise<unknown> {
    const { activityType, attempt, workflowExecution } = this.ctx.info;
    const subjectId = workflowExecution ? subjectOfWorkflowId(workflowExecution.workflowId) : undefined;
    const base = {
      component: 'activity',
      activity: activityType,
      attempt,
      ...(subjectId ? { event: shortHash(subjectId) } : {}),
    };
    const started = performance.now();
    try {
      const result = await next(input);
      const ms = Math.round(performance.now() - started);
      activityOutcomesTotal.inc({ activity: activityType, outcome: 'completed' });
      logger.info({ ...base, outcome: 'completed', ms }, 'activity completed');
      return result;
    } catch (error) {
      const ms = Math.round(performance.now() - started);
      activityOutcomesTotal.inc({ activity: activityType, outcome: 'failed' });
      logger.warn(
        {
          ...base,
          outcome: 'failed',
          ms,
          code: errorCodeOf(error),
          error: scrub(errorMessage(error), subjectId),
        },
        'activity failed',
      );
      throw error;
    }
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function scrub(text: string, subjectId: string | undefined): string {
  const redacted = redactIds(text);
  return subjectId ? redacted.split(subjectId).join(`#${shortHash(subjectId)}`) : redacted;
}
