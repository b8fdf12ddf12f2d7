/**
 * `npm run chaos [-- --short] [-- --only=1,5,fuzz]`: fault injection against real processes. One stack
 * (embedded PostgreSQL and a Temporal dev server on a SQLite file, both restartable; `settle gateway`;
 * worker processes; a recording downstream receiver), the scenarios in turn, and after each one the
 * invariant checker over everything acknowledged so far. Prints pass or fail with the figures of each;
 * exits non-zero if any fails.
 */
import { loadavg } from 'node:os';
import { ProofStack } from '../../testkit/stack';
import { checkInvariants } from '../../testkit/invariants';
import { Provider } from '../../testkit/provider';
import type { Scenario } from './scenarios/common';
import { gracefulShutdown, killAfterCommit, killBeforeCommit, soak } from './scenarios/crashes';
import { appliedThen504, permanentRefusalMidSaga, throttledWithRetryAfter } from './scenarios/downstream';
import { concurrentDeliveries, redeliveryAfterTemporalForgot } from './scenarios/duplicates';
import { gatewayFuzz } from './scenarios/fuzz';
import { postgresCrash, temporalCrash, temporalDownDuringIngest } from './scenarios/outages';
import { steadySoak } from './scenarios/steady-soak';
import { targetDown } from './scenarios/target-down';

const SCENARIOS: Scenario[] = [
  concurrentDeliveries,
  redeliveryAfterTemporalForgot,
  killAfterCommit,
  killBeforeCommit,
  postgresCrash,
  temporalCrash,
  temporalDownDuringIngest,
  throttledWithRetryAfter,
  appliedThen504,
  permanentRefusalMidSaga,
  targetDown,
  gracefulShutdown,
  soak,
  gatewayFuzz,
  steadySoak,
];

const short = process.argv.includes('--short');
const only = process.argv
  .find((arg) => arg.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');

/** Time for everything acknowledged to finish after a scenario (a killed attempt waits 30 s). */
const SETTLE_TIMEOUT_MS = 150_000;

async function main() {
  const started = Date.now();
  const stack = new ProofStack();
  const provider = new Provider(stack);
  const outcomes: { id: string; name: string; ok: boolean }[] = [];
  try {
    log(
      `starting PostgreSQL, the Temporal dev server, the gateway and two workers (load ${loadavg()[0]!.toFixed(2)})`,
    );
    await stack.start();
    await stack.startGateway();
    await stack.startWorker();
    await stack.startWorker();
    for (const scenario of SCENARIOS) {
      if (only && !only.includes(scenario.id)) continue;
      if (short && scenario.fullOnly) continue;
      const scenarioStarted = Date.now();
      let failures: string[];
      let figures: Record<string, number | string> = {};
      try {
        ({ failures, figures } = await scenario.run({ stack, provider, short }));
      } catch (error) {
        failures = [`threw: ${error instanceof Error ? error.message : String(error)}`];
      }
      const invariants = await checkInvariants(stack, provider, { timeoutMs: SETTLE_TIMEOUT_MS }).catch(
        (error: unknown) => ({
          ok: false,
          failures: [`invariant check threw: ${error instanceof Error ? error.message : String(error)}`],
          figures: {},
        }),
      );
      const ok = failures.length === 0 && invariants.ok;
      outcomes.push({ id: scenario.id, name: scenario.name, ok });
      const seconds = ((Date.now() - scenarioStarted) / 1000).toFixed(1);
      process.stdout.write(
        `${ok ? 'PASS' : 'FAIL'}  ${scenario.id.padStart(4)}  ${scenario.name} (${seconds} s)\n`,
      );
      process.stdout.write(`        ${format(figures)}\n`);
      process.stdout.write(`        invariants: ${format(invariants.figures)}\n`);
      for (const failure of [...failures, ...invariants.failures])
        process.stdout.write(`        ✗ ${failure}\n`);
    }
  } finally {
    await stack.close();
  }
  const failed = outcomes.filter((outcome) => !outcome.ok);
  log(`${((Date.now() - started) / 1000).toFixed(0)} s, load ${loadavg()[0]!.toFixed(2)}`);
  process.stdout.write(`\n${outcomes.length - failed.length} passed, ${failed.length} failed\n`);
  if (failed.length || !outcomes.length) process.exitCode = 1;
}

function format(figures: Record<string, number | string>): string {
  return Object.entries(figures)
    .map(([key, value]) => `${key}=${value}`)
    .join(' ');
}

function log(message: string) {
  process.stderr.write(`chaos: ${message}\n`);
}

main().catch((error) => {
  process.stderr.write(
    `chaos failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
