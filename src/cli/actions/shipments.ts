import { readFileSync } from 'node:fs';
import { parse as parseCsv } from 'csv-parse/sync';
import { addShipments } from '../../db/shipments';
import { isShipmentId, SHIPMENT_ID_RULE } from '../../domain/ids';
import { unstorableText } from '../../domain/untrusted-json';
import { CliError, output, withDatabase } from '../context';

/** The rule an event's `data.shipment_id` follows, so that every event can name a loaded shipment. */
function isLoadableShipmentId(value: unknown): value is string {
  return isShipmentId(value) && unstorableText(value) === undefined;
}

export async function add(ids: string[], options: { json?: boolean }): Promise<void> {
  const bad = ids.filter((id) => !isLoadableShipmentId(id));
  if (bad.length) throw new CliError(`not a valid shipment ID: ${bad.join(', ')}`);
  const result = await withDatabase((pool) => addShipments(pool, ids));
  output(
    options.json,
    { ...result, existing: ids.length - result.added },
    (r) => `added ${r.added}, already present ${r.existing}`,
  );
}

export async function importFile(file: string, options: { json?: boolean }): Promise<void> {
  const ids = readShipmentIds(file);
  const result = await withDatabase((pool) => addShipments(pool, ids));
  output(
    options.json,
    { read: ids.length, added: result.added, existing: ids.length - result.added },
    (r) => `read ${r.read}, added ${r.added}, already present ${r.existing}`,
  );
}

/** Every ID in the file, or a CliError naming the first bad line; nothing is written on an error. */
export function readShipmentIds(file: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new CliError(`cannot read ${file}`);
  }
  const ids: string[] = [];
  const take = (value: unknown, line: number) => {
    if (!isLoadableShipmentId(value)) {
      throw new CliError(`${file}:${line}: shipment_id ${SHIPMENT_ID_RULE} (any text PostgreSQL can store)`);
    }
    ids.push(value);
  };
  if (/\.jsonl?$/i.test(file) || text.trimStart().startsWith('{')) {
    text.split('\n').forEach((line, index) => {
      if (!line.trim()) return;
      let record: { shipment_id?: unknown };
      try {
        record = JSON.parse(line) as { shipment_id?: unknown };
      } catch {
        throw new CliError(`${file}:${index + 1}: not valid JSON`);
      }
      take(record.shipment_id, index + 1);
    });
  } else {
    const records = parseCsv(text, { columns: true, skip_empty_lines: true, trim: true }) as Record<
      string,
      string
    >[];
    if (records.length && !('shipment_id' in records[0]!))
      throw new CliError(`${file}: no shipment_id column`);
    records.forEach((record, index) => take(record.shipment_id, index + 2));
  }
  return ids;
}
