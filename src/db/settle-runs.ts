import pg from 'pg';
import type { Queryable } from './pool';
import { deferToCommit } from './transaction';

/**
 * Records a run settle started (migration 019), on the connection of the start: inside an admission's
 * transaction the record commits with the event's row, or not at all, and goes with its COMMIT (one
 * round trip for both: nothing in the transaction reads it back).
 */
export async function recordSettleRun(db: Queryable, workflowId: string, runId: string): Promise<void> {
  const record = `INSERT INTO settle_runs (workflow_id, run_id)
    VALUES (${pg.escapeLiteral(workflowId)}::text, ${pg.escapeLiteral(runId)}::text) ON CONFLICT DO NOTHING`;
  if (deferToCommit(db, record)) return;
  await db.query({
    name: 'settle_runs.record',
    text: `INSERT INTO settle_runs (workflow_id, run_id) VALUES ($1::text, $2::text) ON CONFLICT DO NOTHING`,
    values: [workflowId, runId],
  });
}

/** True when settle recorded one of these runs (a run's own ID, its chain's first) under the workflow ID. */
export async function isSettleRun(
  db: Queryable,
  workflowId: string,
  runIds: readonly string[],
): Promise<boolean> {
  const { rows } = await db.query<{ own: boolean }>({
    name: 'settle_runs.is_own',
    text: `SELECT EXISTS (SELECT 1 FROM settle_runs WHERE workflow_id = $1::text AND run_id = ANY ($2::text[])) AS own`,
    values: [workflowId, runIds.filter((id) => id.length > 0)],
  });
  return rows[0]?.own ?? false;
}

/** The run settle started last under the workflow ID, or undefined when it recorded none. */
export async function latestSettleRunId(db: Queryable, workflowId: string): Promise<string | undefined> {
  const { rows } = await db.query<{ run_id: string }>({
    name: 'settle_runs.latest',
    text: `SELECT run_id FROM settle_runs WHERE workflow_id = $1::text ORDER BY started_at DESC LIMIT 1`,
    values: [workflowId],
  });
  return rows[0]?.run_id;
}
