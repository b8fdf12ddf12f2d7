/**
 * `npm run chaos [-- --short] [-- --only=1,5,fuzz]`: fault injection against real processes. One stack
 * (embedded PostgreSQL and a Temporal dev server on a SQLite file, both restartable; `settle gateway`;
 * worker processes; a recording downstream receiver), the scenarios in turn, and after each one the
 * invariant checker over everything acknowledged so far (testkit/checks.ts prints the verdicts).
 */
import { loadavg } from 'node:os';
import { ProofStack } from '../../testkit/stack';
import { checkInvariants } from '../../testkit/invariants';
import { Provider } from '../../testkit/provider';
import { Checks, errorText, figuresText, runMain } from '../../testkit/checks';
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
  const checks = new Checks();
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
      await checks.run(`${scenario.id.padStart(4)}  ${scenario.name}`, async () => {
        const result = await scenario
          .run({ stack, provider, short })
          .catch((error: unknown) => ({ failures: [`threw: ${errorText(error)}`], figures: {} }));
        // After each scenario, over everything acknowledged so far.
        const invariants = await checkInvariants(stack, provider, { timeoutMs: SETTLE_TIMEOUT_MS }).catch(
          (error: unknown) => ({ failures: [`invariant check threw: ${errorText(error)}`], figures: {} }),
        );
        return {
          failures: [...result.failures, ...invariants.failures],
          detail: `${figuresText(result.figures)}\ninvariants: ${figuresText(invariants.figures)}`,
        };
      });
    }
  } finally {
    await stack.close();
  }
  log(`${((Date.now() - started) / 1000).toFixed(0)} s, load ${loadavg()[0]!.toFixed(2)}`);
  checks.summary();
}

function log(message: string) {
  process.stderr.write(`chaos: ${message}\n`);
}

runMain('chaos', main, { stack: true });
