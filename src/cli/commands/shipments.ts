import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { NewShipment } from '../../db/shipments';
import { isShipmentId, SHIPMENT_ID_RULE } from '../../domain/ids';
import type { majorToMinorUnits } from '../../domain/money';
import { unstorableText } from '../../domain/untrusted-json';
import { CliError } from '../errors';

export function registerShipments(program: Command) {
  const shipments = program
    .command('shipments')
    .description('Load shipment records; a new shipment starts with payment status `pending`.');

  shipments
    .command('add')
    .description(
      'Add one or more shipments by ID; an existing one keeps its status, and takes --amount and --currency when given.',
    )
    .argument('<id...>', 'shipment IDs, e.g. SHP-4821')
    .option(
      '--amount <amount>',
      'the amount each shipment expects to be paid, in major units with at most the currency’s ISO 4217 decimals ' +
        '(42.00 EUR; 5000 HUF, stored as 500000 minor units); a payment of another amount is needs_review',
    )
    .option('--currency <code>', 'the ISO 4217 currency it expects (EUR); required with --amount')
    .option('--json', 'print the result as JSON')
    .action(async (ids: string[], options: { json?: boolean; amount?: string; currency?: string }) =>
      add(ids, options),
    );

  shipments
    .command('import')
    .description(
      'Add shipments from a file: CSV with a `shipment_id` column, or JSONL with a `shipment_id` field; ' +
        'optional `amount` (major units, 42.00) and `currency` (EUR) columns or fields name what each expects to be paid.',
    )
    .argument('<file>', 'path to a .csv or .jsonl file')
    .option('--json', 'print the result as JSON')
    .action(async (file: string, options: { json?: boolean }) => importFile(file, options));
}

// The implementation: what it needs beyond commander is imported when the command runs.

/** The rule an event's `data.shipment_id` follows, so that every event can name a loaded shipment. */
function isLoadableShipmentId(value: unknown): value is string {
  return isShipmentId(value) && unstorableText(value) === undefined;
}

/**
 * What a shipment expects, from `--amount 42.00 --currency EUR` or a file's columns: the amount in
 * ISO 4217 minor units (4200; `--amount 5000 --currency HUF` is 500000), exactly, or the reason it
 * cannot be read. Both or neither.
 */
function readExpectation(
  amount: unknown,
  currency: unknown,
  toMinorUnits: typeof majorToMinorUnits,
): { ok: true; expectation: Omit<NewShipment, 'shipmentId'> } | { ok: false; message: string } {
  const given = (value: unknown) => value !== undefined && value !== null && value !== '';
  if (!given(amount) && !given(currency)) return { ok: true, expectation: {} };
  if (!given(amount) || !given(currency)) {
    return { ok: false, message: 'amount and currency go together: give both or neither' };
  }
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) {
    return { ok: false, message: 'currency must be an ISO 4217 code such as EUR' };
  }
  const text = typeof amount === 'number' ? String(amount) : amount;
  const minor = toMinorUnits(typeof text === 'string' ? text : '', currency);
  if (!minor.ok) return minor;
  return { ok: true, expectation: { expectedAmount: minor.amount, expectedCurrency: currency } };
}

async function add(
  ids: string[],
  options: { json?: boolean; amount?: string; currency?: string },
): Promise<void> {
  const bad = ids.filter((id) => !isLoadableShipmentId(id));
  if (bad.length) throw new CliError(`not a valid shipment ID: ${bad.join(', ')}`);
  const [{ addShipments }, { output, withDatabase }, { majorToMinorUnits }] = await Promise.all([
    import('../../db/shipments.js'),
    import('../context.js'),
    import('../../domain/money.js'),
  ]);
  const read = readExpectation(options.amount, options.currency, majorToMinorUnits);
  if (!read.ok) throw new CliError(read.message);
  const result = await withDatabase((pool) =>
    addShipments(
      pool,
      ids.map((shipmentId) => ({ shipmentId, ...read.expectation })),
    ),
  );
  output(
    options.json,
    { ...result, existing: ids.length - result.added },
    (r) => `added ${r.added}, already present ${r.existing}`,
  );
}

async function importFile(file: string, options: { json?: boolean }): Promise<void> {
  const [{ parse: parseCsv }, { addShipments }, { output, withDatabase }, { majorToMinorUnits }] =
    await Promise.all([
      import('csv-parse/sync'),
      import('../../db/shipments.js'),
      import('../context.js'),
      import('../../domain/money.js'),
    ]);
  const ids = readShipmentIds(file, parseCsv, majorToMinorUnits);
  const result = await withDatabase((pool) => addShipments(pool, ids));
  output(
    options.json,
    { read: ids.length, added: result.added, existing: ids.length - result.added },
    (r) => `read ${r.read}, added ${r.added}, already present ${r.existing}`,
  );
}

/** Every ID in the file, or a CliError naming the first bad line; nothing is written on an error. */
function readShipmentIds(
  file: string,
  parseCsv: typeof import('csv-parse/sync').parse,
  toMinorUnits: typeof majorToMinorUnits,
): NewShipment[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new CliError(`cannot read ${file}`);
  }
  const ids: NewShipment[] = [];
  const take = (record: { shipment_id?: unknown; amount?: unknown; currency?: unknown }, line: number) => {
    const value = record.shipment_id;
    if (!isLoadableShipmentId(value)) {
      throw new CliError(`${file}:${line}: shipment_id ${SHIPMENT_ID_RULE} (any text PostgreSQL can store)`);
    }
    const read = readExpectation(record.amount, record.currency, toMinorUnits);
    if (!read.ok) throw new CliError(`${file}:${line}: ${read.message}`);
    ids.push({ shipmentId: value, ...read.expectation });
  };
  if (/\.jsonl?$/i.test(file) || text.trimStart().startsWith('{')) {
    text.split('\n').forEach((line, index) => {
      if (!line.trim()) return;
      let record: { shipment_id?: unknown };
      try {
        record = JSON.parse(line) as { shipment_id?: unknown };
        if (typeof record !== 'object' || record === null) throw new Error('not an object');
      } catch {
        throw new CliError(`${file}:${index + 1}: not valid JSON`);
      }
      take(record, index + 1);
    });
  } else {
    const records = parseCsv(text, { columns: true, skip_empty_lines: true, trim: true }) as Record<
      string,
      string
    >[];
    if (records.length && !('shipment_id' in records[0]!))
      throw new CliError(`${file}: no shipment_id column`);
    records.forEach((record, index) => take(record, index + 2));
  }
  return ids;
}
