import { paymentWorkflowId } from '../../src/domain/ids';
import type { PaymentEvent } from '../../src/domain/payment-event';
import type { Child, Usage } from '../../testkit/processes';
import type { ProofStack } from '../../testkit/stack';

/**
 * A run's sizes. `warmup`: the workflows (events) each shape runs unmeasured before its first measured
 * row, so that every process compared is past V8's warm-up, settle's and the baselines' alike.
 */
export const SIZES = {
  short: {
    reps: 1,
    /** Rows measured in turn (a goal compares them): each pair's ratio, and their median, need three. */
    turnReps: 3,
    claimEvents: 400,
    floorWorkflows: 300,
    pathEvents: 300,
    warmup: 300,
    loadSeconds: 10,
    importEvents: 1_000,
    bytesEvents: 300,
    retentionClaims: 200_000,
    recoveryListed: 1_000,
    pressureEvents: 300,
    pressureLiveSeconds: 10,
    /** PRL's repetitions: its goal reads the median of their ratios (a window's p99 is a few events). */
    pressureLiveReps: 3,
  },
  full: {
    reps: 3,
    turnReps: 3,
    claimEvents: 2_000,
    floorWorkflows: 1_000,
    pathEvents: 600,
    warmup: 300,
    loadSeconds: 20,
    importEvents: 10_000,
    bytesEvents: 1_000,
    retentionClaims: 10_000_000,
    recoveryListed: 10_000,
    pressureEvents: 2_000,
    /** PRL's live windows: most of the import's drain (2,000 at 20/s), 120 events for a p99. */
    pressureLiveSeconds: 60,
    pressureLiveReps: 3,
  },
};
export type Size = typeof SIZES.short;

export type Figures = Record<string, number>;
/** A measured row: its medians, every repetition's figures, and each process's usage per event. */
export type Result = {
  id: string;
  what: string;
  figures: Figures;
  runs: Figures[];
  resources: Record<string, Usage>;
};
/** One repetition of a row: its figures, what each process spent during it, the events it handled. */
export type Rep = { figures: Figures; usage: Record<string, Usage>; events: number };
/** A row to measure: `once` runs one repetition of it. */
export type Row = { id: string; what: string; reps: number; once: (rep: number) => Promise<Rep> };

/**
 * How to measure a row. `prepare` (shipments, events) runs before the resources are sampled, so each
 * process's CPU covers only the measured work; `events` is how many events (workflows, transactions)
 * one repetition handles, for CPU per event; `workflowIds` names the runs whose histories give the
 * row's actions per event.
 */
export type RowSpec<F extends Figures, P> = {
  prepare?: (rep: number) => Promise<P>;
  run: (prepared: P, rep: number) => Promise<F>;
  events: number | ((figures: F) => number);
  reps?: number;
  workflowIds?: (prepared: P, figures: F, startedAt: Date) => { ids: string[]; since?: Date };
};

/** What a row's run gets: the stack, the sizes, the measuring helpers, and what earlier rows left. */
export type BenchContext = {
  stack: ProofStack;
  size: Size;
  short: boolean;
  wanted: (id: string) => boolean;
  row: <F extends Figures, P = undefined>(id: string, what: string, spec: RowSpec<F, P>) => Row;
  measure: <F extends Figures, P = undefined>(
    id: string,
    what: string,
    spec: RowSpec<F, P>,
  ) => Promise<Result>;
  /**
   * The rows a goal compares, in turn: the first repetition of each, then the second of each, and so
   * on, so that a shared machine's load, which moves by the minute, falls on all of them alike.
   */
  measureInTurn: (rows: Row[]) => Promise<Result[]>;
  results: Result[];
  /** Processes sampled beside the stack's (worker, noop-worker, serve, plain-consumer). */
  processes: Record<string, Child | undefined>;
  /** Node's arguments for a process the bench starts: a CPU profile per thread into `dir`, when asked. */
  profile: (dir?: string) => string[];
  /** The environment of every worker compared: SETTLE_BENCH_WORKER_NODE_OPTIONS as NODE_OPTIONS. */
  workerEnv: Record<string, string>;
  /** P's finished events (R and LS send them again), and L's (LS does too). */
  finished: PaymentEvent[];
  loadFinished: PaymentEvent[];
  /** Runs once the rows measured in turn with a row's are measured (stops a process it started). */
  afterTurn: (stop: () => Promise<void>) => void;
};

/**
 * A row of the table's code: the rows it measured, or rows it returns to be measured in turn with
 * those of the next rows the table marks `turn`.
 */
export type RowRun = (ctx: BenchContext) => Promise<Row[] | void>;

/** A path row's runs: one payment workflow per event. */
export const runsOf = (events: PaymentEvent[]) => ({
  ids: events.map((event) => paymentWorkflowId(event.id)),
});

/** The best rate of the rows `P@…` (or `PE@…`) measured so far: 0 when none was. */
export const bestRate = (ctx: BenchContext, prefix: 'P@' | 'PE@') =>
  Math.max(0, ...ctx.results.filter((r) => r.id.startsWith(prefix)).map((r) => r.figures.eventsPerSecond!));
