import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { SimulateSummary } from '../../stack/simulate';
import { ConfigError } from '../../config/error';
import type { ProviderModule } from '../../providers/module';
import { parseDuration } from '../../domain/duration';
import { onShutdown, stopping } from '../../lib/shutdown';
import { CliError, importDevTool } from '../errors';

export function registerSimulate(program: Command) {
  program
    .command('simulate')
    .description(
      'A payment provider simulator: signed events (authorized, captured, settled per payment) at a chosen ' +
        'rate against any gateway, with shares of immediate duplicates, late replays and out-of-order events. ' +
        'Signs with the first of SETTLE_WEBHOOK_SECRETS (the running stack’s development secret by default). ' +
        'With --provider <name> it sends that provider’s own events (authorized, captured, refunded per ' +
        'payment) to /webhooks/<name>, signed as the provider signs, with what the provider’s row of ' +
        'docs/providers.md names (its webhook secret, or for a certificate signature --signing-key).',
    )
    .option('--provider <name>', 'send as that provider instead of Standard Webhooks (docs/providers.md)')
    .option(
      '--signing-key <key.pem>',
      'for a provider that signs with a certificate: the private key of the certificate the gateway verifies with',
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
    .option(
      '--out <report.jsonl>',
      'send nothing: write the same traffic as a provider report (one event per line) for settle import',
    )
    .option('--json', 'print the summary as JSON')
    .action(async (options: SimulateOptions) => simulate(options));
}

// The implementation: what it needs beyond commander is imported when the command runs.

type SimulateOptions = {
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
  out?: string;
  provider?: string;
  signingKey?: string;
  json?: boolean;
};

async function simulate(options: SimulateOptions): Promise<void> {
  if (options.out) return writeReport(options, options.out);
  const config = await simulatorConfig();
  const provider = await providerSigner(options, config);
  const secret = config.webhookSecrets[0] ?? '';
  if (!secret && !provider)
    throw new CliError('SETTLE_WEBHOOK_SECRETS is not set and no development secret exists.');
  const gatewayUrl = (options.gateway ?? config.gatewayUrl ?? `http://127.0.0.1:${config.port}`).replace(
    /\/$/,
    '',
  );
  if (!/^https?:\/\//.test(gatewayUrl)) throw new CliError('--gateway must be an http(s) URL');
  const count = integer('--count', options.count, 1, 1_000_000);
  const rate = number('--rate', options.rate, 0.01, 10_000);
  const maxDurationMs = parseDuration(options.duration);
  if (maxDurationMs === undefined) throw new CliError('--duration must be a duration such as 30s or 5m');
  const runId = options.runId ?? `sim${Date.now().toString(36)}`;
  if (!/^[A-Za-z0-9_.-]{1,40}$/.test(runId)) throw new CliError('--run-id must be 1 to 40 of [A-Za-z0-9_.-]');
  const [{ simulateTraffic, simulatedShipmentIds }, { addShipments }, { output, withDatabase }] =
    await Promise.all([
      importDevTool('simulate', () => import('../../stack/simulate.js')),
      import('../../db/shipments.js'),
      import('../context.js'),
    ]);

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
    provider,
  }).finally(() => {
    off();
    simulated?.();
  });
  output(options.json, summary, renderSummary);
  if (summary.network_errors) process.exitCode = 1;
}

/**
 * What the simulator signs with and sends to: the running stack's gateway and, as for `settle
 * example`, the development secrets when no secret is set; every provider's variables.
 */
async function simulatorConfig() {
  const [{ loadConfigPart, loadSettings }, { resolveEnvironment, withDevSecrets }, { PROVIDER_VARIABLES }] =
    await Promise.all([
      import('../../config/index.js'),
      import('../../config/dev-state.js'),
      import('../../providers/registry.js'),
    ]);
  const env = withDevSecrets(resolveEnvironment());
  const providerKeys = Object.keys(PROVIDER_VARIABLES) as (keyof typeof PROVIDER_VARIABLES)[];
  try {
    return {
      ...loadConfigPart(['webhookSecrets', 'port', 'providerMode', ...providerKeys], env),
      gatewayUrl: loadSettings(env).gatewayUrl,
    };
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(error.message);
    throw error;
  }
}

/** `--provider <name>`: the provider module's signer, or a message saying what to set. */
async function providerSigner(
  options: Pick<SimulateOptions, 'provider' | 'signingKey'>,
  config: Awaited<ReturnType<typeof simulatorConfig>>,
) {
  if (options.provider === undefined) return undefined;
  const { PROVIDERS, PROVIDER_NAMES, isProviderName } = await import('../../providers/registry.js');
  if (!isProviderName(options.provider)) {
    throw new CliError(`--provider must be one of ${PROVIDER_NAMES.join(', ')}`);
  }
  const module: ProviderModule = PROVIDERS[options.provider];
  let signer: ReturnType<ProviderModule['simulator']['signer']>;
  try {
    signer = module.simulator.signer(config, { signingKeyFile: options.signingKey });
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(error.message);
    throw error;
  }
  if (!signer.ok) throw new CliError(signer.message);
  return signer;
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

function planOptions(options: SimulateOptions) {
  const count = integer('--count', options.count, 1, 1_000_000);
  const runId = options.runId ?? `sim${Date.now().toString(36)}`;
  if (!/^[A-Za-z0-9_.-]{1,40}$/.test(runId)) throw new CliError('--run-id must be 1 to 40 of [A-Za-z0-9_.-]');
  return {
    count,
    runId,
    duplicateShare: number('--duplicates', options.duplicates, 0, 1),
    lateReplayShare: number('--late', options.late, 0, 1),
    outOfOrderShare: number('--out-of-order', options.outOfOrder, 0, 1),
    seed: options.seed === undefined ? undefined : integer('--seed', options.seed, 0, 2 ** 31),
  };
}

/** `--out`: the traffic as a report file, and the shipments it needs (added with --add-shipments). */
async function writeReport(options: SimulateOptions, file: string): Promise<void> {
  const [{ planTraffic, reportLines }, { addShipments }, { output, withDatabase }] = await Promise.all([
    importDevTool('simulate', () => import('../../stack/simulate.js')),
    import('../../db/shipments.js'),
    import('../context.js'),
  ]);
  const plan = planTraffic(planOptions(options));
  if (options.addShipments) await withDatabase((pool) => addShipments(pool, plan.shipmentIds));
  writeFileSync(file, reportLines(plan));
  const summary = {
    file,
    run_id: plan.runId,
    lines: plan.sends.length,
    events: plan.events.length,
    immediate_duplicates: plan.sends.filter((send) => send.kind === 'duplicate').length,
    late_replays: plan.sends.filter((send) => send.kind === 'late').length,
    shipment_ids: plan.shipmentIds,
  };
  output(
    options.json,
    summary,
    (s) =>
      `wrote ${s.lines} lines (${s.events} events, ${s.immediate_duplicates} duplicates, ${s.late_replays} late replays) ` +
      `to ${s.file}; load them with settle import ${s.file}`,
  );
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
