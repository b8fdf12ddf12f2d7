/**
 * A settle worker in a process of its own, so a test can kill it with SIGKILL mid-activity. Reads the
 * ordinary settle environment; SETTLE_TEST_TUNING (JSON) shortens timeouts and leases. Prints
 * `worker ready` once it polls.
 */
import { loadConfig } from '../../src/config';
import { createPool } from '../../src/db/pool';
import { createWorker } from '../../src/worker/run';

async function main() {
  const config = loadConfig();
  const pool = createPool(config.databaseUrl);
  const tuning = process.env.SETTLE_TEST_TUNING ? JSON.parse(process.env.SETTLE_TEST_TUNING) : undefined;
  const { worker } = await createWorker({ config, pool, tuning });
  const running = worker.run();
  process.stdout.write('worker ready\n');
  await running;
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
