import { createHmac, timingSafeEqual } from 'node:crypto';

/** The memo field every run settle starts carries its mark in. */
export const RUN_MARK_MEMO = 'settleRunMark';

/**
 * What a start binds its run to: the deployment's run-mark key (db/run-mark-key.ts, made once and
 * read only by settle) and what the run is for (a payment event's payload hash; a reminder binds its
 * workflow ID alone).
 */
export type RunMarkSpec = { key: Buffer; binding: string };

/** The mark: HMAC-SHA256 over the workflow ID and the binding, hex. */
export function runMark(spec: RunMarkSpec, workflowId: string): string {
  return createHmac('sha256', spec.key)
    .update(`settle run mark v1\n${workflowId}\n${spec.binding}`)
    .digest('hex');
}

/** True when a run's memo carries settle's mark for this workflow ID and binding. */
export function carriesRunMark(
  memo: Record<string, unknown> | undefined,
  spec: RunMarkSpec,
  workflowId: string,
): boolean {
  const found = memo?.[RUN_MARK_MEMO];
  if (typeof found !== 'string' || !/^[0-9a-f]{64}$/.test(found)) return false;
  return timingSafeEqual(Buffer.from(found, 'hex'), Buffer.from(runMark(spec, workflowId), 'hex'));
}
