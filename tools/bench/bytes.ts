import type pg from 'pg';
import type { PaymentEvent } from '../../src/domain/payment-event';
import { round } from '../../testkit/processes';
import type { ProofStack } from '../../testkit/stack';
import { benchFullPath, preparePathEvents, type PathFigures } from './full-path';
import { runsOf, type RowRun } from './context';

/**
 * The on-disk size of every settle table (`table:<name>`, pg_total_relation_size: heap, TOAST and
 * indexes) and of each of its indexes (`index:<name>`, pg_relation_size), in bytes.
 */
export async function relationSizes(pool: pg.Pool): Promise<Record<string, number>> {
  const { rows } = await pool.query<{ name: string; bytes: string }>(
    `SELECT 'table:' || c.relname AS name, pg_total_relation_size(c.oid)::text AS bytes
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
     UNION ALL
     SELECT 'index:' || i.relname, pg_relation_size(i.oid)::text
       FROM pg_index x
       JOIN pg_class i ON i.oid = x.indexrelid
       JOIN pg_class t ON t.oid = x.indrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace
      WHERE n.nspname = current_schema() AND t.relkind IN ('r', 'p')`,
  );
  return Object.fromEntries(rows.map((row) => [row.name, Number(row.bytes)]));
}

export type BytesPrepared = { before: Record<string, number>; events: PaymentEvent[] };

/** The sizes before anything of the row is written (its shipments included), then its events. */
export async function prepareBytes(stack: ProofStack, count: number): Promise<BytesPrepared> {
  const before = await relationSizes(stack.pool);
  return { before, events: await preparePathEvents(stack, count) };
}

/**
 * BY: `events.length` events through the whole path (one fresh shipment each, released and posted),
 * then the growth of every settle table and index divided by the number of events: what one event
 * keeps on disk until `settle purge` removes it. `bytesPerEvent` is the sum over the tables;
 * `table:<name>` and `index:<name>` are per event too (sizes grow in 8 kB pages: a few hundred events
 * are enough for the big tables, not for the small ones).
 */
export async function benchBytesPerEvent(
  stack: ProofStack,
  prepared: BytesPrepared,
  concurrency: number,
): Promise<PathFigures & Record<string, number>> {
  const path = await benchFullPath(stack, prepared.events, concurrency);
  await allDelivered(stack.pool, prepared.events);
  const after = await relationSizes(stack.pool);
  const n = prepared.events.length;
  const perEvent: Record<string, number> = {};
  let total = 0;
  for (const [name, bytes] of Object.entries(after)) {
    const grown = bytes - (prepared.before[name] ?? 0);
    perEvent[name] = round(grown / n, 1);
    if (name.startsWith('table:')) total += grown;
  }
  return { ...path, bytesPerEvent: round(total / n, 1), ...perEvent };
}

/** The receiver has the ERP entry a moment before the worker marks its outbox row delivered. */
async function allDelivered(pool: pg.Pool, events: PaymentEvent[], timeoutMs = 30_000): Promise<void> {
  const ids = events.map((event) => event.id);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { rows } = await pool.query<{ open: string }>(
      `SELECT count(*)::text AS open FROM outbox WHERE event_id = ANY($1::text[]) AND status <> 'delivered'`,
      [ids],
    );
    if (rows[0]!.open === '0') return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('BY: outbox rows still undelivered after 30 s');
}

/** BY, once: the growth of every settle table and index over a known number of events. */
export const runBytes: RowRun = async ({ stack, size, measure }) => {
  await measure('BY', `bytes per event: ${size.bytesEvents} events through the path, 50 in flight`, {
    prepare: () => prepareBytes(stack, size.bytesEvents),
    run: (prepared) => benchBytesPerEvent(stack, prepared, 50),
    events: size.bytesEvents,
    reps: 1,
    workflowIds: (prepared) => runsOf(prepared.events),
  });
};
