import { ApplicationFailure, Context } from '@temporalio/activity';
import { ErrorCode } from '../domain/errors';
import { paymentWorkflowId } from '../domain/ids';
import { shortHash } from '../lib/hash';
import { logger } from '../lib/logger';

/** The workflow ID of the run this activity is a step of; undefined outside an activity (a script, a test). */
export function currentWorkflowId(): string | undefined {
  try {
    return Context.current().info.workflowExecution?.workflowId;
  } catch {
    return undefined;
  }
}

/**
 * The event a payment run acts for: the one its workflow ID names (`payment:<event id>`); '' for a
 * run under any other ID, which acts for no event; undefined outside an activity.
 */
export function eventOfCurrentRun(): string | undefined {
  const run = currentWorkflowId();
  if (run === undefined) return undefined;
  return run.startsWith(paymentWorkflowId('')) ? run.slice(paymentWorkflowId('').length) : '';
}

/** True when this activity's run is `workflowId`'s, or there is no run to compare (a script, a test). */
export function runIs(workflowId: string): boolean {
  const run = currentWorkflowId();
  return run === undefined || run === workflowId;
}

/**
 * Every activity that acts for an event or a reminder calls this first: it acts only for the run whose
 * workflow ID names what its input names. A copy of an input run under another workflow ID is refused,
 * non-retryable `wrong_workflow_id`, before anything is written, and logged by short hashes.
 * Outside an activity (a script, a test) there is no run to compare, and nothing is refused.
 */
export function actOnlyFor(workflowId: string, activity: string): void {
  if (!runIs(workflowId)) throw wrongRun(workflowId, activity);
}

/** The refusal of a run that is not `workflowId`'s (actOnlyFor), logged. */
export function wrongRun(workflowId: string, activity: string): ApplicationFailure {
  logger.warn(
    {
      component: 'activity',
      activity,
      workflowId: shortHash(currentWorkflowId() ?? ''),
      names: shortHash(workflowId),
    },
    'activity refused: its run’s workflow ID is not the one its input names',
  );
  return ApplicationFailure.create({
    message:
      `this run's workflow ID is not the one its input names (${shortHash(workflowId)}): ` +
      'a copy of another run’s input; nothing was done',
    type: ErrorCode.WrongWorkflowId,
    nonRetryable: true,
  });
}
