import { setTimeout as delay } from 'node:timers/promises';
import type pg from 'pg';
import { OUTBOX_TARGETS, type OutboxTarget } from '../domain/outbox';
import { gateRate, targetLimits, type TargetLimitsConfig } from '../domain/target-limits';

/** How often a waiting import looks for its runs' claims and its targets' schedules. */
const CHECK_MS = 250;
/**
 * A run not reconciled this long after its start stops counting against the backlog: the pace is a
 * courtesy to live traffic, not a guarantee, and a run that fails before its claim (or waits for a
 * worker that is down) must not stop the import for good. Without workers an import crawls at
 * `maxBacklog` lines a minute instead of flooding Temporal.
 */
const FORGET_AFTER_MS = 60_000;
/**
 * How far ahead a limited target's calls may already be scheduled (its next free slot, or the turn
 * its waiting bulk calls were given) before the import waits: a new run would only wait behind them.
 */
const SCHEDULED_AHEAD_MS = 1_000;

/**
 * Keeps `settle import` at the pace its work can go, two ways.
 *
 * **The backlog.** At most `maxBacklog` runs ahead of the workers: each started run counts until its
 * claim is committed (its reconcile ran), and the import waits while the count is at the limit.
 * Admission then goes at the pace the workers drain the bulk task queue, instead of as fast as
 * Temporal accepts starts (about 80 a second here, more than these two cores can run), so a
 * 10,000-line import never loads Temporal and PostgreSQL with thousands of starts while live events
 * arrive. (Temporal's own backlog count, DescribeTaskQueue's stats, is cached for about 5 s by the
 * server: too stale to pace by.)
 *
 * **The limited targets** (SETTLE_<TARGET>_RATE_LIMIT, as the workers read it). A run started faster
 * than its calls can go waits for its turn at the gate (activities/target-gate.ts) in a durable
 * activity of its own: an activity more per event, and its run parked in Temporal. So the import
 * starts runs no faster than the tightest limited target takes calls (the gate's rate), and waits
 * while that target's calls are already scheduled more than SCHEDULED_AHEAD_MS ahead (live calls
 * come first, and held calls wait for their turns): a run then reaches the gate as its slot comes,
 * and its first pass makes the call. A line that starts no run (a duplicate, a refused line) gives
 * its turn back.
 */
export class ImportPace {
  /** Started runs not yet seen reconciled, with when they started. */
  private readonly outstanding = new Map<string, number>();
  private checkedAt = 0;
  /** The limited targets, and the gate's spacing of the tightest one's calls; undefined: none. */
  private readonly limited: { targets: OutboxTarget[]; spacingMs: number } | undefined;
  /** When the next run may start at the limited targets' pace (this process's clock). */
  private nextAt = 0;
  /** Until when the limited targets' calls were scheduled at the last check (this process's clock). */
  private scheduledUntil = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly maxBacklog: number,
    limits: TargetLimitsConfig = {},
  ) {
    const rated = OUTBOX_TARGETS.flatMap((target) => {
      const rate = targetLimits(limits, target).ratePerSecond;
      return rate === undefined ? [] : [{ target, rate: gateRate(rate) }];
    });
    this.limited =
      rated.length === 0
        ? undefined
        : {
            targets: rated.map(({ target }) => target),
            spacingMs: 1000 / Math.min(...rated.map(({ rate }) => rate)),
          };
  }

  /**
   * Resolves when one more line may start a run (at once under the limits), or when `signal` aborts.
   * The line takes a turn at the limited targets' pace: report it `started` or `notStarted`.
   */
  async admitOne(signal?: AbortSignal): Promise<void> {
    for (;;) {
      if (signal?.aborted) return;
      if (Date.now() - this.checkedAt >= CHECK_MS && (this.limited || this.backlogFull())) {
        await this.check();
      }
      const waitMs = this.backlogFull() ? CHECK_MS : this.turnWaitMs();
      if (waitMs <= 0) break;
      // An abort ends the wait early (the delay rejects); the loop then sees it.
      await delay(Math.min(waitMs, CHECK_MS), undefined, { signal }).catch(() => {});
    }
    if (this.limited) this.nextAt = Math.max(this.nextAt, Date.now()) + this.limited.spacingMs;
  }

  /** A run this import started: it counts until its claim appears. */
  started(eventId: string): void {
    this.outstanding.set(eventId, Date.now());
  }

  /** A line admitOne let through started no run: its turn goes to the next line. */
  notStarted(): void {
    if (this.limited) this.nextAt -= this.limited.spacingMs;
  }

  private backlogFull(): boolean {
    return this.outstanding.size >= this.maxBacklog;
  }

  /** How long until the next run's turn at the limited targets; at most 0 without them. */
  private turnWaitMs(): number {
    if (!this.limited) return 0;
    return Math.max(this.nextAt, this.scheduledUntil - SCHEDULED_AHEAD_MS) - Date.now();
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
      if (this.limited) {
        // The gate's schedule, as PostgreSQL's clock sees it, in milliseconds from now.
        const { rows: ahead } = await this.pool.query<{ ms: number | null }>({
          name: 'import.scheduled_ahead',
          text: `SELECT (EXTRACT(EPOCH FROM max(greatest(next_slot_at, bulk_next_at, clock_timestamp()))
                   - clock_timestamp()) * 1000)::float8 AS ms
                   FROM target_pressure WHERE target = ANY($1::text[])`,
          values: [this.limited.targets],
        });
        this.scheduledUntil = this.checkedAt + (ahead[0]?.ms ?? 0);
      }
    } catch {
      // PostgreSQL unreachable: the lines themselves will report it; the next check tries again.
    }
  }
}

/** `settle import`'s default: a few seconds of the workers' bulk work queued ahead of them. */
export const DEFAULT_MAX_BACKLOG = 100;
