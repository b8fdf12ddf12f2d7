import { ApplicationFailure, Context } from '@temporalio/activity';
import type pg from 'pg';
import { recordUnadmittedRun } from '../db/events';
import { isEventId, subjectOfWorkflowId } from '../domain/ids';
import type { InvalidRunInput, InvalidRunResult } from '../domain/workflow-contracts';
import { sha256Hex, shortHash } from '../lib/hash';
import { logger } from '../lib/logger';
import { unadmittedRunsTotal } from '../metrics/settle-metrics';

/** Temporal's own default bound on a workflow ID; a server configured for more is cut to it here. */
const WORKFLOW_ID_MAX_CHARS = 1_000;
/** A workflow type name as stored: settle's are short, a forged one is cut. */
const WORKFLOW_TYPE_MAX_CHARS = 100;

/** Text from outside made safe to store and print: control characters replaced, length bounded. */
function printable(text: string, max: number): string {
  // eslint-disable-next-line no-control-regex
  return text.slice(0, max).replace(/[\u0000-\u001f\u007f-\u009f]/g, '\ufffd');
}

/**
 * Records a run that failed on its own input before any step (workflows/invalid-input.ts) as an
 * `unadmitted_run` exception, reason `invalid_input`. Which run it is comes from the activity's own
 * context (the workflow ID, run ID and type Temporal gave it), not from the input: the input is only
 * hashed (its first INVALID_INPUT_SAMPLE_CHARS characters of canonical JSON) and measured. The event
 * the row is listed under is the one the workflow ID names (`payment:<event id>`, `reminder:<delivery
 * id>`); a workflow ID of no such shape is listed under `workflow-<its short hash>`. A later attempt
 * of the same run counts on its row; the metric and the log line come once per run.
 */
export async function recordInvalidRun(pool: pg.Pool, input: InvalidRunInput): Promise<InvalidRunResult> {
  const info = Context.current().info;
  const run = info.workflowExecution;
  if (!run) {
    throw ApplicationFailure.nonRetryable(
      'recordInvalidRun records a workflow run: it was called without one',
    );
  }
  const workflowType = printable(info.workflowType ?? '(unknown)', WORKFLOW_TYPE_MAX_CHARS);
  const workflowId = printable(run.workflowId, WORKFLOW_ID_MAX_CHARS);
  const subject = subjectOfWorkflowId(run.workflowId);
  const eventId = isEventId(subject) ? subject : `workflow-${shortHash(run.workflowId)}`;
  const sample = typeof input?.sample === 'string' ? input.sample : '';
  const recorded = await recordUnadmittedRun(pool, {
    workflowId,
    runId: run.runId,
    eventId,
    payloadSha256: sha256Hex(sample),
    shipmentId: null,
    eventType: workflowType,
    reason: 'invalid_input',
  });
  if (recorded) {
    unadmittedRunsTotal.inc({ reason: 'invalid_input' });
    logger.warn(
      {
        component: 'activity',
        activity: 'recordInvalidRun',
        event: shortHash(eventId),
        workflowId: shortHash(run.workflowId),
        runId: run.runId,
        workflowType,
        inputChars: typeof input?.length === 'number' ? input.length : null,
        reason: 'invalid_input',
      },
      'a run settle did not start failed on its input before any step: recorded, nothing was applied',
    );
  }
  return { recorded };
}
