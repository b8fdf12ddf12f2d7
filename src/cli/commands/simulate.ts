import type { Command } from 'commander';
import { addShipments } from '../../db/shipments';
import { parseDuration } from '../../domain/duration';
import { simulateTraffic, simulatedShipmentIds, type SimulateSummary } from '../../simulate';
import { onShutdown, stopping } from '../../lib/shutdown';
import { resolveEnvironment } from '../../stack/dev-state';
import { CliError, output, withDatabase } from '../context';

type Options = {
  gateway?: string;
  count: string;
  rate: string;
  duration: string;
  duplicates: string;
  late: string;
  outOfOrder: string;
  seed?: string;
  runId?: string;
  addShipments?: boolean;
  json?: boolean;
};

export function registerSimulate(program: Command) {
  program
    .command('simulate')
    .description(
      'A payment provider simulator: signed events (authorized, captured, settled per payment) at a chosen ' +
        'rate against any gateway, with shares of immediate duplicates, late replays and out-of-order events. ' +
        'Signs with the first of SETTLE_WEBHOOK_SECRETS (the running stack’s development secret by default).',
    )
    .option('--gateway <url>', 'gateway base URL (default: the running stack’s, or http://127.0.0.1:$PORT)')
    .option('--count <n>', 'distinct events to send', '300')
    .option('--rate <per-second>', 'requests per second, repeats included', '20')
    .option('--duration <duration>', 'stop after this long whatever is left', '5m')
    .option('--duplicates <share>', 'share of events sent twice in a row (0..1)', '0.1')
    .option('--late <share>', 'share of events sent again after all others (0..1)', '0.05')
    .option('--out-of-order <share>', 'share of payments whose settled comes before captured (0..1)', '0.1')
    .option('--seed <n>', 'same seed, same traffic')
    .option('--run-id <id>', 'prefix of the generated IDs (default: a new one)')
    .option('--add-shipments', 'add the simulated shipments to DATABASE_URL first, so events apply')
    .option('--json', 'print the summary as JSON')
    .action(async (options: Options) => {
      const env = resolveEnvironment();
      const secret = (env.SETTLE_WEBHOOK_SECRETS ?? '').split(',')[0]?.trim();
      if (!secret) throw new CliError('SETTLE_WEBHOOK_SECRETS is not set and no development secret exists.');
      const gatewayUrl = (
        options.gateway ??
        env.SETTLE_GATEWAY_URL ??
        `http://127.0.0.1:${env.PORT ?? 8080}`
      ).replace(/\/$/, '');
      if (!/^https?:\/\//.test(gatewayUrl)) throw new CliError('--gateway must be an http(s) URL');
      const count = integer('--count', options.count, 1, 1_000_000);
      const rate = number('--rate', options.rate, 0.01, 10_000);
      const maxDurationMs = parseDuration(options.duration);
      if (maxDurationMs === undefined) throw new CliError('--duration must be a duration such as 30s or 5m');
      const runId = options.runId ?? `sim${Date.now().toString(36)}`;
      if (!/^[A-Za-z0-9_.-]{1,40}$/.test(runId))
        throw new CliError('--run-id must be 1 to 40 of [A-Za-z0-9_.-]');

      if (options.addShipments) {
        await withDatabase((pool) => addShipments(pool, simulatedShipmentIds(runId, count)));
      }
      // Ctrl-C or SIGTERM (lib/shutdown.ts) stops sending; requests in flight finish, the summary prints.
      let simulated!: () => void;
      const off = onShutdown(
        'simulate (requests in flight)',
        () => new Promise<void>((resolve) => (simulated = resolve)),
      );
      const summary = await simulateTraffic({
        gatewayUrl,
        secret,
        count,
        rate,
        maxDurationMs,
        duplicateShare: number('--duplicates', options.duplicates, 0, 1),
        lateReplayShare: number('--late', options.late, 0, 1),
        outOfOrderShare: number('--out-of-order', options.outOfOrder, 0, 1),
        runId,
        seed: options.seed === undefined ? undefined : integer('--seed', options.seed, 0, 2 ** 31),
        signal: stopping,
      }).finally(() => {
        off();
        simulated?.();
      });
      output(options.json, summary, renderSummary);
      if (summary.network_errors) process.exitCode = 1;
    });
}

function number(flag: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < min || n > max)
    throw new CliError(`${flag} must be a number from ${min} to ${max}`);
  return n;
}

function integer(flag: string, value: string, min: number, max: number): number {
  const n = number(flag, value, min, max);
  if (!Number.isInteger(n)) throw new CliError(`${flag} must be an integer`);
  return n;
}

function renderSummary(s: SimulateSummary): string {
  return [
    `simulated run ${s.run_id} against ${s.gateway_url}: ${s.sent} requests in ${(s.elapsed_ms / 1000).toFixed(1)} s${s.stopped_early ? ' (stopped early)' : ''}`,
    `  planned    ${s.planned.events} events, ${s.planned.immediate_duplicates} immediate duplicates, ` +
      `${s.planned.late_replays} late replays, ${s.planned.out_of_order_payments} payments out of order`,
    `  responses  ${Object.entries(s.responses)
      .map(([key, n]) => `${key} ${n}`)
      .join(', ')}${s.network_errors ? `, network errors ${s.network_errors}` : ''}`,
  ].join('\n');
}
