import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { addShipments } from '../../src/db/shipments';
import type { PaymentEvent } from '../../src/domain/payment-event';
import { erpKey, makeEvent, newRunId, shipmentFor } from '../../testkit/load';
import { spawnTs, within } from '../../testkit/processes';
import type { ProofStack } from '../../testkit/stack';
import type { RowRun } from './context';

/** How long the report's events may take to be delivered after the import ends. */
const DRAIN_DEADLINE_MS = 15 * 60_000;

export type ImportReport = { events: PaymentEvent[]; file: string };

/** A report (JSON lines) of `count` events for known shipments, written to the stack's scratch folder. */
export async function prepareImport(stack: ProofStack, count: number): Promise<ImportReport> {
  const runId = newRunId('i');
  await addShipments(
    stack.pool,
    Array.from({ length: count }, (_, i) => shipmentFor(runId, i)),
  );
  const events = Array.from({ length: count }, (_, i) => makeEvent(runId, i));
  const file = join(stack.scratch, `report-${runId}.jsonl`);
  writeFileSync(file, events.map((event) => JSON.stringify(event)).join('\n') + '\n');
  return { events, file };
}

/**
 * I: `settle import` (the real command, in its own process, default concurrency) of a report of
 * `count` events for known shipments. Lines per second of the import itself, and events per second
 * end to end (until the last event's ERP entry is applied).
 */
export async function benchImport(
  stack: ProofStack,
  { events, file }: ImportReport,
  /** What the import's environment adds to the stack's (the workers' target limits, for PR and PRL). */
  env: Record<string, string> = {},
): Promise<{
  importLinesPerSecond: number;
  endToEndEventsPerSecond: number;
  accepted: number;
  undelivered: number;
}> {
  const count = events.length;
  const started = Date.now();
  const command = await spawnTs(
    'settle import',
    [
      'src/cli/main.ts',
      'import',
      file,
      '--json',
      // To measure another admission rate; unset, the command's default.
      ...(process.env.SETTLE_BENCH_IMPORT_CONCURRENCY
        ? ['--concurrency', process.env.SETTLE_BENCH_IMPORT_CONCURRENCY]
        : []),
    ],
    { ...stack.env(), ...env },
    () => true,
  );
  const exit = await command.exited;
  const importMs = Date.now() - started;
  let accepted: number;
  try {
    accepted = (JSON.parse(command.output()) as { counts: { accepted: number } }).counts.accepted;
  } catch {
    throw new Error(`settle import exited ${exit} without a JSON summary`);
  }

  const deadline = Date.now() + DRAIN_DEADLINE_MS;
  const delivered = await within(
    Promise.all(events.map((event) => stack.receiver.waitForApplied(erpKey(event.id)))),
    deadline - Date.now(),
    undefined,
  );
  const lastAt = delivered ? Math.max(...delivered) : Date.now();
  const undelivered = events.filter(
    (event) => stack.receiver.keys.get(erpKey(event.id))?.applied !== 1,
  ).length;
  return {
    importLinesPerSecond: count / (importMs / 1000),
    endToEndEventsPerSecond: count / ((lastAt - started) / 1000),
    accepted,
    undelivered,
  };
}

/** I, once: a report's events take minutes to drain on 2 cores. */
export const runImport: RowRun = async ({ stack, size, measure }) => {
  await measure('I', `settle import of a ${size.importEvents}-event report`, {
    prepare: () => prepareImport(stack, size.importEvents),
    run: (report) => benchImport(stack, report),
    events: size.importEvents,
    reps: 1,
  });
};
