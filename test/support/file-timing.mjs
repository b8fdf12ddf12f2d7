/**
 * Loaded into every test process by `npm test` (its runner passes `--import` to node --test,
 * whose file processes inherit it): when a test file's process exits, appends one JSON line
 * `{ file, ms }` to SETTLE_TEST_TIMINGS, the process's wall time from its start (tsx loading, hooks
 * and tests included). The runner prints the slowest files from it.
 */
import { appendFileSync } from 'node:fs';
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { relative } from 'node:path';
import { isMainThread } from 'node:worker_threads';

const timings = process.env.SETTLE_TEST_TIMINGS;
const file = process.argv[1];
// Plain JavaScript: Temporal's workflow threads inherit `--import` without tsx's loader. Worker
// threads are skipped (they share the process's exit).
if (timings && file?.endsWith('.test.ts') && isMainThread) {
  process.on('exit', () => {
    const line = { file: relative(process.cwd(), file), ms: Math.round(performance.now()) };
    appendFileSync(timings, `${JSON.stringify(line)}\n`);
  });
}
