import { errorCodeOf } from '../domain/errors';
import { subjectOfWorkflowId } from '../domain/ids';
import { shortHash } from '../lib/hash';
import { logger } from '../lib/logger';
import { activityOutcomesTotal } from '../metrics/settle-metrics';
import { redactIds } from '../temporal/redact-ids';

/** The run an activity attempt works for, as its log lines name it. */
export type AttemptInfo = {
  activityType: string;
  attempt: number;
  workflowExecution?: { workflowId: string };
};

/**
 * One JSON log line per activity attempt (type, attempt, outcome, duration, and the event or reminder
 * delivery it works for, as a short hash of the ID its workflow ID carries) and
 * `settle_activity_outcomes_total`. Observes only: it passes results and errors through unchanged.
 * The worker's activity interceptor runs every activity through it, and reconcileAndDeliver each of
 * its steps, under the step's own activity name, so that the logs and metrics of an event read the
 * same whichever shape ran it.
 */
export async function observeAttempt<T>(
  info: AttemptInfo,
  run: () => Promise<T>,
  options: { logCompletion?: boolean } = {},
): Promise<T> {
  const { activityType, attempt, workflowExecution } = info;
  const subjectId = workflowExecution ? subjectOfWorkflowId(workflowExecution.workflowId) : undefined;
  const base = {
    component: 'activity',
    activity: activityType,
    attempt,
    ...(subjectId ? { event: shortHash(subjectId) } : {}),
  };
  const started = performance.now();
  try {
    const result = await run();
    const ms = Math.round(performance.now() - started);
    activityOutcomesTotal.inc({ activity: activityType, outcome: 'completed' });
    if (options.logCompletion !== false)
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

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function scrub(text: string, subjectId: string | undefined): string {
  const redacted = redactIds(text);
  return subjectId ? redacted.split(subjectId).join(`#${shortHash(subjectId)}`) : redacted;
}
