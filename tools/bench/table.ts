import { median } from '../../testkit/load';
import { round } from '../../testkit/processes';
import { runBytes } from './bytes';
import { runClaimLoop } from './claim-loop';
import type { Result, RowRun, Size } from './context';
import { runEager } from './eager';
import { runP } from './full-path';
import { runImport } from './import';
import { runLiveDuringImport } from './live-during-import';
import { runLiveDuringStorm, STORM_FACTOR } from './live-during-storm';
import { runL } from './open-arrivals';
import { cpuByClass } from './measure';
import { PRESSURE_LIMIT, runPressure } from './pressure';
import { RECOVERY_MISSED, runRecovery } from './recovery';
import { runR } from './replay-storm';
import { runRetention } from './retention';
import { runCodecCost, runTracingCost } from './serve-variants';
import { runT0, runT3 } from './temporal-floor';
import { runT3W } from './without-settle';

/** A goal line: met, MISS, not measured (`met` null), or with `context` a ratio kept for reference. */
export type Goal = { goal: string; measured: string; met: boolean | null; context?: true };

/** What the goals read from a run's results. */
export class Reading {
  constructor(
    private readonly results: Result[],
    readonly size: Size,
  ) {}
  private row = (id: string) => this.results.find((r) => r.id === id);
  fig = (id: string, key: string) => this.row(id)?.figures[key];
  cpu = (id: string) => {
    const row = this.row(id);
    return row ? cpuByClass(row.resources) : {};
  };
  rss = (id: string, process: string) => this.row(id)?.resources[process]?.peakRssMb;
  /** The rate of `a`'s n-th repetition over `b`'s: rows measured in turn ran theirs side by side. */
  inTurn = (a: string, b: string) => {
    const rate = (id: string) =>
      this.row(id)?.runs.map((run) => run.eventsPerSecond ?? run.workflowsPerSecond ?? Number.NaN) ?? [];
    const [ra, rb] = [rate(a), rate(b)];
    return ra.length === rb.length ? ra.map((rateA, n) => rateA / rb[n]!) : [];
  };
  /** A row's figure `a` over its figure `b` in each of its repetitions (during / idle). */
  eachRun = (id: string, a: string, b: string) =>
    this.row(id)?.runs.map((run) => (run[a] ?? Number.NaN) / (run[b] ?? Number.NaN)) ?? [];
}

/** A goal: its line (which may name the run's sizes), and how a run's results meet it. */
export type GoalSpec = { goal: (size: Size) => string; check: (r: Reading) => Omit<Goal, 'goal'> };
type Pair = [number | undefined, number | undefined];
const NOT_MEASURED = { measured: 'not measured', met: null };
const shown = (value: number, [a, b]: [number, number], each = '') =>
  `${round(value, 2)} (${round(a, 1)} / ${round(b, 1)}${each})`;

/**
 * The ratio a goal reads: a / b, or, given two or more ratios measured side by side (`each`, named
 * `by` in the line), their median, with each and the two medians a and b shown beside it.
 */
function ratioRead(
  [a, b]: [number, number],
  each: number[],
  by: string,
): { ratio: number; measured: string } {
  if (each.length < 2) return { ratio: a / b, measured: shown(a / b, [a, b]) };
  const ratio = median(each);
  const measured = `${round(ratio, 2)} by its ${by} (${each.map((x) => round(x, 2)).join(', ')}; medians ${round(a, 1)} / ${round(b, 1)})`;
  return { ratio, measured };
}

/**
 * Met when a / b ≥ min; `context` never reads as a MISS. With `turn`, the rows ran their repetitions
 * side by side, and the ratio read is the median of each pair's: a pair meets the same moments of the
 * machine, which the medians of the two rows taken apart do not (they are shown beside it).
 */
function atLeast(
  goal: string,
  min: number,
  read: (r: Reading) => Pair,
  { turn, context }: { turn?: [string, string]; context?: true } = {},
): GoalSpec {
  const ctx = context ? { context } : {};
  return {
    goal: () => goal,
    check: (r) => {
      const [a, b] = read(r);
      if (a === undefined || b === undefined) return { ...NOT_MEASURED, ...ctx };
      const { ratio, measured } = ratioRead([a, b], turn ? r.inTurn(...turn) : [], 'pairs');
      return { measured, met: ratio >= min, ...ctx };
    },
  };
}

/**
 * Met when a / b ≤ max. With `each`, a row that measures both in each repetition (idle, then during)
 * is read by the median of its repetitions' own ratios: a p99 of one window moves with a few events.
 */
function atMost(
  goal: string,
  max: number,
  read: (r: Reading) => Pair,
  { each }: { each?: (r: Reading) => number[] } = {},
): GoalSpec {
  return {
    goal: () => goal,
    check: (r) => {
      const [a, b] = read(r);
      if (!a || !b) return NOT_MEASURED;
      const { ratio, measured } = ratioRead([a, b], each?.(r) ?? [], 'repetitions');
      return { measured, met: ratio <= max };
    },
  };
}

/** A goal of its own shape: what was measured and whether it is met, undefined when not measured. */
function holds(
  goal: string | ((size: Size) => string),
  check: (r: Reading) => { measured: string; met: boolean } | undefined,
): GoalSpec {
  return { goal: typeof goal === 'string' ? () => goal : goal, check: (r) => check(r) ?? NOT_MEASURED };
}

/** Of two rows' rates (events or workflows a second). */
const rates =
  (a: string, b: string) =>
  (r: Reading): Pair => [
    r.fig(a, 'eventsPerSecond') ?? r.fig(a, 'workflowsPerSecond'),
    r.fig(b, 'eventsPerSecond') ?? r.fig(b, 'workflowsPerSecond'),
  ];
/** A row's figure over another of the same row (during / idle). */
const within =
  (id: string, a: string, b: string) =>
  (r: Reading): Pair => [r.fig(id, a), r.fig(id, b)];
/** The mean CPU per event of a variant's two rows (off, on, on, off): each serve's plus its PostgreSQL's. */
const serveCpu = (r: Reading, row: string, variant: 'on' | 'off') => {
  const each = [1, 2]
    .map((n) => r.cpu(`${row}@50 ${variant} #${n}`))
    .map((c) => (c.serve === undefined ? undefined : c.serve + (c.pg ?? 0)));
  return each.every((ms) => ms !== undefined) ? (each[0]! + each[1]!) / 2 : undefined;
};

export type BenchRow = {
  id: string;
  /** What the row proves. */
  proves: string;
  goals?: GoalSpec[];
  /** Run only when `--only` names it; else every run has it, CI's `--short` too. */
  byHand?: true;
  /** Also on `--server=cluster` when `--only` names nothing. */
  cluster?: true;
  /** Its rows are measured in turn with the next `turn` row's. */
  turn?: true;
  /** A row whose figures this one needs: it runs too. */
  needs?: string;
  /** Its code, in the row's file; rows that share one are measured together. */
  run: RowRun;
};

/**
 * settle's benchmark rows, in the order they run. The floors (T0, T3L: workflows whose activities do
 * nothing) are context, not goals: settle cannot cost less than doing nothing (docs/performance.md,
 * "The bound"). Actions are Temporal Cloud's billable actions (actions.ts).
 */
export const ROWS: BenchRow[] = [
  {
    id: 'B0',
    proves: 'the claim transaction a user would hand-roll: plain pg, no Temporal',
    run: runClaimLoop,
  },
  {
    id: 'B1',
    proves: "settle's reconcile activity called directly costs little more than B0",
    goals: [atLeast('B1 ≥ 0.8 × B0', 0.8, rates('B1', 'B0'))],
    run: runClaimLoop,
  },
  {
    id: 'T0',
    proves: "Temporal's floor: a no-op workflow and activity, 10 and 50 in flight",
    cluster: true,
    run: runT0,
  },
  {
    id: 'T3',
    proves: "P's shape on the floor: three no-op activities (T3), as local activities (T3L)",
    turn: true,
    cluster: true,
    run: runT3,
  },
  {
    id: 'P',
    proves: 'the whole path, webhook to ERP delivery, 10 and 50 in flight, against the floors',
    goals: [
      atLeast('P ≥ 0.6 × T0 (50 in flight)', 0.6, rates('P@50', 'T0@50'), { context: true }),
      atLeast('P ≥ 0.6 × T0 (10 in flight)', 0.6, rates('P@10', 'T0@10'), { context: true }),
      atLeast("P ≥ 1.0 × T3L (P's shape, 50 in flight)", 1.0, rates('P@50', 'T3L@50'), {
        turn: ['P@50', 'T3L@50'],
        context: true,
      }),
      atMost('worker CPU/event ≤ 1.1 × no-op worker (P@50 / T3L@50)', 1.1, (r) => [
        r.cpu('P@50').worker,
        r.cpu('T3L@50').noop,
      ]),
      atMost("settle's CPU/event (gateway+worker+pg) ≤ Temporal's (P@50)", 1, (r) => {
        const own = r.cpu('P@50');
        return [
          own.gateway === undefined ? undefined : own.gateway + (own.worker ?? 0) + (own.pg ?? 0),
          own.temporal === undefined ? undefined : own.temporal + (own['temporal-pg'] ?? 0),
        ];
      }),
      atMost('worker RSS ≤ 1.1 × no-op worker (P@50 / T3L@50)', 1.1, (r) => [
        r.rss('P@50', 'worker'),
        r.rss('T3L@50', 'noop-worker'),
      ]),
      holds('happy-path actions/event ≤ 2 (P@50)', (r) => {
        const actions = r.fig('P@50', 'actionsPerEvent');
        if (actions === undefined) return undefined;
        const t3l = r.fig('T3L@50', 'actionsPerEvent') ?? 'not measured';
        const usd = r.fig('P@50', 'usdPerMillionEvents');
        // Its start and one workflow task of local activities, T3L's shape (SPEC.md, "What an event costs").
        return { measured: `${actions} (T3L ${t3l}; $${usd} per M events at list)`, met: actions <= 2 };
      }),
    ],
    cluster: true,
    turn: true,
    run: runP,
  },
  {
    id: 'T3W',
    proves: "P's work without settle: a plain consumer of T3L's shape, given settle's operator view",
    goals: [
      atLeast(
        "P ≥ 1.0 × T3W (P's work without settle, given settle's view, 50 in flight)",
        1.0,
        rates('P@50', 'T3W@50'),
        { turn: ['P@50', 'T3W@50'] },
      ),
    ],
    turn: true,
    cluster: true,
    run: runT3W,
  },
  {
    id: 'L',
    proves: "acknowledgement latency under open arrivals at 25 % and 50 % of P's best rate",
    goals: [
      holds('ack p99 < 100 ms at 50% load', (r) => {
        const p99 = r.fig('L@50%', 'ackP99Ms');
        return p99 === undefined ? undefined : { measured: `${p99} ms`, met: p99 < 100 };
      }),
    ],
    needs: 'P',
    run: runL,
  },
  {
    id: 'PE',
    proves: 'P through `settle serve` (eager start, one process), and LE its load row',
    goals: [
      atLeast('P_eager ≥ 1.2 × T0 (50 in flight, settle serve)', 1.2, rates('PE@50', 'T0@50'), {
        turn: ['PE@50', 'T0@50'],
        context: true,
      }),
      atMost('delivered p50 at 50% load: serve (eager) < gateway + worker', 0.999, (r) => [
        r.fig('LE@50%', 'deliveredP50Ms'),
        r.fig('L@50%', 'deliveredP50Ms'),
      ]),
    ],
    cluster: true,
    run: runEager,
  },
  {
    id: 'T3WE',
    proves: 'T3W started eagerly, as serve starts its runs, in turn with PE@50',
    goals: [
      atLeast(
        "P_eager ≥ 1.0 × T3WE (P's work without settle, given settle's view, started eagerly, 50 in flight)",
        1.0,
        rates('PE@50', 'T3WE@50'),
        { turn: ['PE@50', 'T3WE@50'] },
      ),
    ],
    cluster: true,
    run: runEager,
  },
  {
    id: 'PC',
    proves: "the payload codec's CPU: P@50 through serve, encryption off, on, on, off",
    goals: [
      atMost(
        "payload codec ≤ 5 % of settle's CPU/event (serve+pg, PC@50 on / off, off-on-on-off)",
        1.05,
        (r) => [serveCpu(r, 'PC', 'on'), serveCpu(r, 'PC', 'off')],
      ),
    ],
    byHand: true,
    run: runCodecCost,
  },
  {
    id: 'TR',
    proves: "tracing's CPU: P@50 through serve, tracing off, on, on, off, to a local OTLP endpoint",
    goals: [
      atMost("tracing ≤ 25 % of settle's CPU/event (serve+pg, TR@50 on / off, off-on-on-off)", 1.25, (r) => [
        serveCpu(r, 'TR', 'on'),
        serveCpu(r, 'TR', 'off'),
      ]),
    ],
    byHand: true,
    run: runTracingCost,
  },
  {
    id: 'R',
    proves: "a replay storm of P's events: each a 200 duplicate, answered from its claim",
    goals: [
      atLeast('R ≥ 3 × P', 3, (r) => [
        r.fig('R', 'eventsPerSecond'),
        Math.max(r.fig('P@10', 'eventsPerSecond') ?? 0, r.fig('P@50', 'eventsPerSecond') ?? 0) || undefined,
      ]),
      holds('a redelivered duplicate costs no action (R)', (r) => {
        const actions = r.fig('R', 'actionsPerEvent');
        return actions === undefined
          ? undefined
          : { measured: `${actions} actions/event`, met: actions === 0 };
      }),
    ],
    needs: 'P',
    run: runR,
  },
  {
    id: 'LS',
    proves: "live webhooks during a provider's retry storm of every earlier event",
    goals: [
      atMost(
        'live delivered p99 during a retry storm ≤ 1.5 × idle (LS)',
        1.5,
        within('LS', 'stormDeliveredP99Ms', 'idleDeliveredP99Ms'),
      ),
      holds(`every retry-storm delivery 200 duplicate, no 5xx, no 503 (LS, ${STORM_FACTOR} × live)`, (r) => {
        const [sent, duplicates] = [r.fig('LS', 'stormSent'), r.fig('LS', 'stormDuplicates')];
        if (sent === undefined) return undefined;
        const errors = `${r.fig('LS', 'storm5xx')} 5xx (${r.fig('LS', 'storm503')} 503)`;
        return {
          measured: `${duplicates} of ${sent} duplicate, ${errors} at ${r.fig('LS', 'stormPerSecond')}/s`,
          met: duplicates === sent,
        };
      }),
    ],
    needs: 'P',
    cluster: true,
    run: runLiveDuringStorm,
  },
  { id: 'BY', proves: 'the bytes one event keeps in the tables and indexes of settle', run: runBytes },
  {
    id: 'RT',
    proves: 'the purge of past-retention claims under live load, and a claim store that stays its size',
    goals: [
      atMost(
        'live delivered p99 during a purge ≤ 1.5 × idle (RT)',
        1.5,
        within('RT', 'purgingDeliveredP99Ms', 'idleDeliveredP99Ms'),
      ),
      atMost(
        'claim store after five fill-and-purge cycles ≤ 1.2 × after one (RT)',
        1.2,
        within('RT', 'claimStoreMbAfterFiveCycles', 'claimStoreMbAfterFirstCycle'),
      ),
    ],
    run: runRetention,
  },
  {
    id: 'RS',
    proves: 'a recovery sweep over listed events nearly all applied already starts only the missed',
    goals: [
      holds(
        (size) =>
          `a recovery sweep over ${size.recoveryListed} listed, ${RECOVERY_MISSED} missed, costs ≤ ${RECOVERY_MISSED} starts (RS)`,
        (r) => {
          const starts = r.fig('RS', 'starts');
          if (starts === undefined) return undefined;
          return {
            measured: `${starts} starts, ${r.fig('RS', 'eventsPerSecond')} listed events/s`,
            met: starts <= RECOVERY_MISSED,
          };
        },
      ),
    ],
    run: runRecovery,
  },
  { id: 'I', proves: "`settle import` of a provider's report, to its last delivery", run: runImport },
  {
    id: 'LI',
    proves: "live webhooks keep their latency while an import's backlog drains",
    goals: [
      atMost(
        'live delivered p99 during an import ≤ 2 × idle (25% load)',
        2,
        within('LI', 'importingDeliveredP99Ms', 'idleDeliveredP99Ms'),
      ),
    ],
    needs: 'P',
    run: runLiveDuringImport,
  },
  {
    id: 'PR',
    proves: `an ERP that allows ${PRESSURE_LIMIT} calls a second gets no more, and every entry once`,
    goals: [
      holds('a limited ERP: ≤ 1.1 × its limit a second, 0 × 429, each entry once (PR)', (r) => {
        const f = (key: string) => r.fig('PR', key)!;
        if (r.fig('PR', 'limitPerSecond') === undefined) return undefined;
        return {
          measured:
            `${f('busiestSecondCalls')} calls in the busiest second (limit ${f('limitPerSecond')}), ${f('throttled')} × 429, ` +
            `${f('appliedTwice')} applied twice, ${f('undelivered')} undelivered`,
          met:
            f('busiestSecondCalls') <= 1.1 * f('limitPerSecond') &&
            f('throttled') === 0 &&
            f('appliedTwice') === 0 &&
            f('undelivered') === 0,
        };
      }),
      atMost(
        'a limited ERP drains within 1.2 × events / limit (PR)',
        1,
        within('PR', 'drainSeconds', 'drainBoundSeconds'),
      ),
    ],
    run: runPressure,
  },
  {
    id: 'PRL',
    proves: 'live webhooks still go first while an import waits on the limited ERP',
    goals: [
      atMost(
        'live delivered p99 during an import to a limited ERP ≤ 2 × idle (PRL)',
        2,
        within('PRL', 'importingDeliveredP99Ms', 'idleDeliveredP99Ms'),
        { each: (r) => r.eachRun('PRL', 'importingDeliveredP99Ms', 'idleDeliveredP99Ms') },
      ),
    ],
    run: runPressure,
  },
];
