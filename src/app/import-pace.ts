import { setTimeout as delay } from 'node:timers/promises';
import type pg from 'pg';

/** How often a waiting import looks for its runs' claims. */
const CHECK_MS = 250;
/**
 * A run not reconciled this long after its start stops counting against the backlog: the pace is a
 * courtesy to live traffic, not a guarantee, and a run that fails before its claim (or waits for a
 * worker that is down) must not stop the import for good. Without workers an import crawls at
 * `maxBacklog` lines a minute instead of flooding Temporal.
 */
const FORGET_AFTER_MS = 60_000;

/**
 * Keeps `settle import` at most `maxBacklog` runs ahead of the workers: each started run counts until
 * its claim is committed (its reconcile ran), and the import waits while the count is at the limit.
 * Admission then goes at the pace the workers drain the bulk task queue, instead of as fast as
 * Temporal accepts starts (about 80 a second here, more than these two cores can run), so a
 * 10,000-line import never loads Temporal and PostgreSQL with thousands of starts while live events
 * arrive. (Temporal's own backlog count, DescribeTaskQueue's stats, is cached for about 5 s by the
 * server: too stale to pace by.)
 */
export class ImportPace {
  /** Started runs not yet seen reconciled, with when they started. */
  private readonly outstanding = new Map<string, number>();
  private checkedAt = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly maxBacklog: number,
  ) {}

  /** Resolves when one more run may start (at once under the limit), or when `signal` aborts. */
  async admitOne(signal?: AbortSignal): Promise<void> {
    while (!signal?.aborted && this.outstanding.size >= this.maxBacklog) {
      if (Date.now() - this.checkedAt >= CHECK_MS) await this.check();
      if (this.outstanding.size < this.maxBacklog) break;
      // An abort ends the wait early (the delay rejects); the loop then sees it.
      await delay(CHECK_MS, undefined, { signal }).catch(() => {});
    }
  }

  /** A run this import started: it counts until its claim appears. */
  started(eventId: string): void {
    this.outstanding.set(eventId, Date.now());
  }

  private async check(): Promise<void> {
    this.checkedAt = Date.now();
    const forgetBefore = Date.now() - FORGET_AFTER_MS;
    for (const [eventId, startedAt] of this.outstanding) {
      if (startedAt < forgetBefore) this.outstanding.delete(eventId);
    }
    try {
      const { rows } = await this.pool.query<{ event_id: string }>({
        name: 'import.claimed',
        text: 'SELECT event_id FROM claims WHERE event_id = ANY($1::text[])',
        values: [[...this.outstanding.keys()]],
      });
      for (const row of rows) this.outstanding.delete(row.event_id);
    } catch {
      // PostgreSQL unreachable: the lines themselves will report it; the next check tries again.
    }
  }
}

/** `settle import`'s default: a few seconds of the workers' bulk work queued ahead of them. */
export const DEFAULT_MAX_BACKLOG = 100;
