import type pg from 'pg';
import type { ForeignRun } from '../client';
import { recordUnadmittedRun } from '../db/events';
import { loadRunMarkKey } from '../db/run-mark-key';
import { shortHash } from '../lib/hash';
import { logger } from '../lib/logger';
import { unadmittedRunsTotal } from '../metrics/settle-metrics';

const keys = new WeakMap<pg.Pool, Promise<Buffer>>();

/**
 * The deployment's run-mark key (temporal/run-mark.ts), read once per pool: every start still marks its
 * run with it for processes of the previous release; settle itself knows its runs by the run IDs it
 * records (db/settle-runs.ts). A failed read is not kept.
 */
export function runMarkKey(pool: pg.Pool): Promise<Buffer> {
  let key = keys.get(pool);
  if (!key) {
    key = loadRunMarkKey(pool);
    keys.set(pool, key);
    key.catch(() => keys.delete(pool));
  }
  return key;
}

/**
 * Records the runs a start found holding its ID that settle has no record of starting (terminated if
 * they were open) as `unadmitted_run` exceptions, reason `foreign_start`: who took the ID, with which run. Each is
 * counted once and logged by short hashes.
 */
export async function recordDisplacedRuns(
  pool: pg.Pool,
  displaced: readonly ForeignRun[],
  subject: { id: string; type: string; shipmentId: string | null; payloadSha256: string },
): Promise<void> {
  for (const run of displaced) {
    const first = await recordUnadmittedRun(pool, {
      workflowId: run.workflowId,
      runId: run.runId,
      eventId: subject.id,
      // Not the foreign run's input (settle never read it): the hash of what settle started in its place.
      payloadSha256: subject.payloadSha256,
      shipmentId: subject.shipmentId,
      eventType: subject.type,
      reason: 'foreign_start',
    });
    if (first) unadmittedRunsTotal.inc({ reason: 'foreign_start' });
    logger.warn(
      {
        component: 'start',
        event: shortHash(subject.id),
        workflowId: shortHash(run.workflowId),
        runId: run.runId,
        workflowType: run.workflowType,
        status: run.status,
        reason: 'foreign_start',
      },
      'a run settle did not start held the workflow ID: terminated, settle started its own',
    );
  }
}
