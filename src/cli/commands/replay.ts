import type { Command } from 'commander';
import type { ReplayDelivery, ReplayReport, ReplayResult } from '../../app/replay';
import { formatDuration, parseDuration } from '../../domain/duration';
import { onShutdown, stopping } from '../../lib/shutdown';
import { CliError } from '../errors';

const DEFAULT_WAIT_MS = 2 * 60_000;

export function registerReplay(program: Command) {
  program
    .command('replay')
    .description(
      'Push stored events through the path again. The claim decides: an applied event changes nothing ' +
        '(its pending deliveries, e.g. after a cancelled run, are sent again), an unmatched one is applied ' +
        'now if its shipment exists. Returns once each reconcile has decided and says what happened: the ' +
        'claim before and after, and each delivery started, in flight or already settled; --wait also ' +
        'waits for the deliveries. Safe to interrupt and rerun. Exit codes: 0 done, 4 an event is unknown, ' +
        '75 a reconcile did not decide (or, with --wait, a delivery was still pending) in time, 2 with ' +
        '--wait a delivery ended undelivered, 130 interrupted.',
    )
    .argument('[event-id...]', "the provider's event IDs")
    .option('--unmatched', 'replay every unmatched event whose shipment now exists, with progress')
    .option('--wait', 'also wait until no delivery of the event is pending')
    .option('--timeout <duration>', 'how long --wait waits', formatDuration(DEFAULT_WAIT_MS))
    .option('--json', 'print the results as JSON')
    .action(
      async (
        eventIds: string[],
        options: { unmatched?: boolean; wait?: boolean; timeout: string; json?: boolean },
      ) => replay(eventIds, options),
    );
}

// The implementation: what it needs beyond commander is imported when the command runs.

/** Unmatched events replayed at once by `--unmatched`. */
const UNMATCHED_CONCURRENCY = 4;
/** How long a reconcile may take to decide before the replay reports it undecided. */
const DECIDE_TIMEOUT_MS = 60_000;

async function replay(
  eventIds: string[],
  options: { unmatched?: boolean; wait?: boolean; timeout: string; json?: boolean },
): Promise<void> {
  if (options.unmatched && eventIds.length) throw new CliError('give event IDs or --unmatched, not both');
  if (!options.unmatched && !eventIds.length)
    throw new CliError('give at least one event ID, or --unmatched');
  const waitMs = parseDuration(options.timeout);
  if (waitMs === undefined) throw new CliError('--timeout must be a duration such as 2m or 90s');
  const [{ listReplayableUnmatched }, { replayEvents }, { output, withServices }] = await Promise.all([
    import('../../db/claims.js'),
    import('../../app/replay.js'),
    import('../context.js'),
  ]);

  // Ctrl-C or SIGTERM (lib/shutdown.ts) stops replaying and waiting; what was replayed stands.
  let replayed!: () => void;
  const replayDone = new Promise<void>((resolve) => (replayed = resolve));
  const off = onShutdown('replay', () => {
    process.stderr.write('settle: stopping; what was replayed stands, rerun to finish\n');
    return replayDone;
  });
  try {
    const report = await withServices(async ({ pool, client, config }) => {
      const ids = options.unmatched ? await listReplayableUnmatched(pool) : eventIds;
      if (options.unmatched)
        process.stderr.write(`replaying ${ids.length} unmatched event(s) whose shipment now exists\n`);
      return replayEvents({ pool, client, taskQueue: config.taskQueue }, ids, {
        concurrency: options.unmatched ? UNMATCHED_CONCURRENCY : 1,
        decideTimeoutMs: DECIDE_TIMEOUT_MS,
        waitForDeliveriesMs: options.wait ? waitMs : undefined,
        signal: stopping,
        onWaiting: (decided) =>
          process.stderr.write(
            `${decided.event_id}: the claim says ${decided.outcome}; waiting up to ` +
              `${formatDuration(waitMs)} for ${decided.pending} pending delivery(ies)…\n`,
          ),
        onResult: (result, done) => {
          if (options.unmatched) process.stderr.write(`[${done}/${ids.length}] ${describeResult(result)}\n`);
        },
      });
    });
    output(options.json, report, renderReport);
    for (const result of report.results.filter((r) => r.status === 'not_found'))
      process.stderr.write(`settle: no stored event ${result.event_id}; nothing was replayed\n`);
    process.exitCode = exitCode(report, options.wait === true);
  } finally {
    replayed();
    off();
  }
}

function exitCode(report: ReplayReport, waited: boolean): number {
  const { summary, results } = report;
  if (summary.interrupted) return 130;
  if (summary.not_found) return 4;
  if (summary.undecided) return 75;
  if (waited) {
    const settled = results.map((r) => (r.status === 'replayed' ? r.deliveries_settled : true));
    if (settled.includes(false)) {
      const stillPending = results.some(
        (r) => r.status === 'replayed' && r.deliveries.some((d) => d.status === 'pending'),
      );
      return stillPending ? 75 : 2;
    }
    const undelivered = results.some(
      (r) =>
        r.status === 'replayed' &&
        r.deliveries.some((d) => d.action_taken !== 'none' && d.status !== 'delivered'),
    );
    if (undelivered) return 2;
  }
  return 0;
}

function renderDelivery(d: ReplayDelivery): string {
  const progress = d.attempts ? `, ${d.attempts} attempt(s)` : '';
  const error = d.last_error ? `, last error: ${d.last_error}` : '';
  return `${d.target}.${d.action} ${d.status}${progress}${error}`;
}

function describeResult(r: ReplayResult): string {
  if (r.status === 'not_found') return `${r.event_id}: no stored event; nothing was replayed`;
  if (r.status === 'undecided') {
    return r.run_status
      ? `${r.event_id}: the run ended ${r.run_status} before its reconcile decided; settle inspect ${r.event_id}`
      : `${r.event_id}: the reconcile has not decided yet (is a worker running?); rerun later, it is safe`;
  }
  const claim = r.changed
    ? `claim ${r.before ?? 'not reconciled'} → ${r.after}`
    : `no change, the claim already says ${r.after}`;
  const started = r.deliveries.filter((d) => d.action_taken === 'started');
  const inFlight = r.deliveries.filter((d) => d.action_taken === 'in_flight');
  const rest = r.deliveries.filter((d) => d.action_taken === 'none' || d.action_taken === 'left');
  const parts = [`${r.event_id}: ${claim}`];
  if (started.length) {
    const verb = r.changed ? 'started' : 'restarted';
    parts.push(`${verb} ${started.length} delivery(ies): ${started.map(renderDelivery).join('; ')}`);
  }
  if (inFlight.length) {
    parts.push(
      `a run was already running and is sending ${inFlight.length} delivery(ies): ${inFlight.map(renderDelivery).join('; ')}`,
    );
  }
  if (rest.length) parts.push(`nothing to send for ${rest.map(renderDelivery).join('; ')}`);
  if (!r.deliveries.length) parts.push('no deliveries');
  if (r.deliveries_settled === false && r.deliveries.some((d) => d.status === 'pending'))
    parts.push('still pending when --wait gave up');
  return parts.join('; ');
}

function renderReport(report: ReplayReport): string {
  const lines = report.results.map(describeResult);
  const s = report.summary;
  if (report.results.length !== 1 || s.interrupted) {
    lines.push(
      `${s.replayed} replayed (${s.applied_now} applied now, ${s.unchanged} unchanged), ${s.undecided} undecided, ` +
        `${s.not_found} not found; ${s.deliveries_started} delivery(ies) started, ${s.deliveries_pending} pending` +
        (s.interrupted ? '; interrupted: rerun to finish' : ''),
    );
  }
  return lines.join('\n');
}
