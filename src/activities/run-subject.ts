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

/**
 * Every activity that acts for an event or a reminder calls this first: it acts only for the run whose
 * workflow ID names what its input names. A copy of an input run under another workflow ID is refused,
 * non-retryable `wrong_workflow_id`, before anything is read or written, and logged by short hashes.
 * Outside an activity (a script, a test) there is no run to compare, and nothing is refused.
 */
export function actOnlyFor(workflowId: string, activity: string): void {
  const run = currentWorkflowId();
  if (run === undefined || run === workflowId) return;
  logger.warn(
    { component: 'activity', activity, workflowId: shortHash(run), names: shortHash(workflowId) },
    'activity refused: its run’s workflow ID is not the one its input names',
  );
  throw ApplicationFailure.create({
    message:
      `this run's workflow ID is not the one its input names (${shortHash(workflowId)}): ` +
      'a copy of another run’s input; nothing was done',
    type: ErrorCode.WrongWorkflowId,
    nonRetryable: true,
  });
}
