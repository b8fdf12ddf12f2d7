import { ApplicationFailure, log, patched, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { canonicalJson } from '../lib/canonical-json';
import { ErrorCode } from '../domain/errors';

/**
 * The patch under which a run that fails on its input records itself first. A run recorded before it
 * failed straight away, with no command before its failure; replaying one must do the same.
 */
export const RECORD_INVALID_INPUT_PATCH = 'record-invalid-input';

/** How much of a bad input's JSON its record's hash covers: the record stays small whatever came in. */
export const INVALID_INPUT_SAMPLE_CHARS = 4_096;

/**
 * Bookkeeping in PostgreSQL, bounded: a run that cannot record itself within about ten minutes fails
 * all the same (its failure is in Temporal), rather than hold its workflow ID while PostgreSQL is down.
 */
const { recordInvalidRun } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 12,
  },
});

/**
 * Fails a run whose input is not what settle starts it with (Temporal's frontend takes any input), after
 * recording it as an `unadmitted_run` exception (reason `invalid_input`), so that a run settle did not
 * start shows in `settle exceptions` even when it never reaches a step. Nothing of the input but its
 * length and a hash of its first characters leaves the workflow. The failure is the same either way:
 * non-retryable `invalid_workflow_input`.
 */
export async function refuseInvalidInput(input: unknown, message: string): Promise<never> {
  if (patched(RECORD_INVALID_INPUT_PATCH)) {
    const json = canonicalJson(input) || 'null';
    try {
      await recordInvalidRun({ sample: json.slice(0, INVALID_INPUT_SAMPLE_CHARS), length: json.length });
    } catch {
      log.warn('a run that failed on its input could not be recorded');
    }
  }
  throw ApplicationFailure.nonRetryable(message, ErrorCode.InvalidWorkflowInput);
}
