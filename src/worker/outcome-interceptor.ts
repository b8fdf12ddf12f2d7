import type { Context } from '@temporalio/activity';
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
  Next,
} from '@temporalio/worker';
import type pg from 'pg';
import { eventToCommitSeconds as readEventToCommit, recordRepeatClaim } from '../db/repeats';
import { codeForSqlState } from '../domain/errors';
import { shortHash } from '../lib/hash';
import { logger, redactIds } from '../lib/logger';
import {
  activityOutcomesTotal,
  duplicateClaimsTotal,
  eventToCommitSeconds,
  reconcileOutcomesTotal,
  transactionFailuresTotal,
} from '../metrics/settle-metrics';
import type { ReconcileResult } from '../activities/reconcile-payment';

/**
 * One JSON log line per activity attempt (type, attempt, outcome, duration, the event as a short hash)
 * and the SLO metrics that only the worker sees: reconcile outcomes, duplicate claims, event-to-commit
 * latency and transaction failures. Observes only: results and errors pass through unchanged.
 */
export function activityOutcomeInterceptor(deps: { pool: pg.Pool }): ActivityInterceptorsFactory {
  return (ctx: Context) => ({ inbound: new ActivityOutcomeInterceptor(ctx, deps.pool) });
}

class ActivityOutcomeInterceptor implements ActivityInboundCallsInterceptor {
  constructor(
    private readonly ctx: Context,
    private readonly pool: pg.Pool,
  ) {}

  async execute(
    input: ActivityExecuteInput,
    next: Next<ActivityInboundCallsInterceptor, 'execute'>,
  ): Promise<unknown> {
    const { activityType, attempt } = this.ctx.info;
    const subjectId = subjectOf(input.args[0]);
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
      const details =
        activityType === 'reconcilePayment' && subjectId
          ? await this.observeReconcile(subjectId, result as ReconcileResult)
          : {};
      logger.info({ ...base, outcome: 'completed', ms, ...details }, 'activity completed');
      return result;
    } catch (error) {
      const ms = Math.round(performance.now() - started);
      const code = errorCode(error);
      activityOutcomesTotal.inc({ activity: activityType, outcome: 'failed' });
      if (activityType === 'reconcilePayment') transactionFailuresTotal.inc({ code });
      logger.warn(
        { ...base, outcome: 'failed', ms, code, error: scrub(errorMessage(error), subjectId) },
        'activity failed',
      );
      throw error;
    }
  }

  private async observeReconcile(eventId: string, result: ReconcileResult) {
    reconcileOutcomesTotal.inc({ outcome: result.outcome });
    try {
      if (result.claimExisted) {
        duplicateClaimsTotal.inc();
        await recordRepeatClaim(this.pool, eventId);
      } else {
        const seconds = await readEventToCommit(this.pool, eventId);
        if (seconds !== undefined) eventToCommitSeconds.observe(seconds);
      }
    } catch {
      // Statistics only; the effect already committed.
    }
    return { result: result.outcome, claimExisted: result.claimExisted };
  }
}

/** The event (or delivery) an activity works for, whatever shape its first argument has. */
function subjectOf(arg: unknown): string | undefined {
  if (!arg || typeof arg !== 'object') return undefined;
  const record = arg as Record<string, unknown>;
  for (const key of ['eventId', 'deliveryId', 'id']) {
    if (typeof record[key] === 'string') return record[key];
  }
  const nested = record.event;
  return nested && typeof nested === 'object' ? subjectOf(nested) : undefined;
}

function errorCode(error: unknown): string {
  const e = error as { type?: unknown; code?: unknown };
  if (typeof e?.type === 'string' && e.type) return e.type;
  return codeForSqlState(typeof e?.code === 'string' ? e.code : undefined) ?? 'unknown';
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function scrub(text: string, subjectId: string | undefined): string {
  const redacted = redactIds(text);
  return subjectId ? redacted.split(subjectId).join(`#${shortHash(subjectId)}`) : redacted;
}
