import { createHmac } from 'node:crypto';

/** The memo field every run settle starts carries its mark in. */
export const RUN_MARK_MEMO = 'settleRunMark';

/**
 * What a start binds its run to: the deployment's run-mark key (db/run-mark-key.ts, made once and
 * read only by settle) and what the run is for (a payment event's payload hash; a reminder binds its
 * workflow ID alone). The previous release knew its runs by this mark; settle now knows them by the
 * run IDs it records (db/settle-runs.ts), since a memo can be copied onto another run, and writes the
 * mark only so that processes of the previous release, during a rolling upgrade, still take the runs
 * of the new one for settle's own.
 */
export type RunMarkSpec = { key: Buffer; binding: string };

/** The mark: HMAC-SHA256 over the workflow ID and the binding, hex. */
export function runMark(spec: RunMarkSpec, workflowId: string): string {
  return createHmac('sha256', spec.key)
    .update(`settle run mark v1\n${workflowId}\n${spec.binding}`)
    .digest('hex');
}
