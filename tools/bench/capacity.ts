/**
 * `npx tsx tools/bench/capacity.ts [results-file] [--row=P@50] [--utilisation=0.6]`: docs/capacity.md's
 * capacity model from a bench results file (journal/bench-results/latest-cluster.json by default, written by
 * `npm run bench -- --server=cluster`): the CPU milliseconds per event each process class used in a
 * row, and the cores each class needs at 100, 1,000 and 10,000 events/s at the given utilisation
 * (0.6: 40 % headroom for bursts, restarts and catch-up). Prints a Markdown table.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Usage } from '../../testkit/processes';

const args = process.argv.slice(2);
const file =
  args.find((arg) => !arg.startsWith('--')) ??
  join(__dirname, '..', '..', 'journal', 'bench-results', 'latest-cluster.json');
const rowId = args.find((arg) => arg.startsWith('--row='))?.slice('--row='.length) ?? 'P@50';
const utilisation = Number(
  args.find((arg) => arg.startsWith('--utilisation='))?.slice('--utilisation='.length) ?? 0.6,
);
const RATES = [100, 1_000, 10_000];

/** Process classes of a deployment, and the sampled processes each is made of. */
const CLASSES: [string, string[]][] = [
  ['gateway', ['gateway']],
  ['settle worker', ['worker']],
  ['PostgreSQL (settle)', ['postgres']],
  ['Temporal frontend', ['temporal-frontend']],
  ['Temporal history', ['temporal-history']],
  ['Temporal matching', ['temporal-matching']],
  ['Temporal worker (system)', ['temporal-worker']],
  ['PostgreSQL (Temporal)', ['temporal-postgres']],
  ['Temporal dev server (all of it)', ['temporal']],
];

type Report = {
  server: string;
  startedAt: string;
  machine: { loadAverage: { before: number[]; after: number[] } };
  results: { id: string; figures: Record<string, number>; resources: Record<string, Usage> }[];
};

const report = JSON.parse(readFileSync(file, 'utf8')) as Report;
const row = report.results.find((result) => result.id === rowId);
if (!row) throw new Error(`${file} has no row ${rowId}`);
const lines = [
  `From ${file.split('/').pop()} (${report.server}, ${report.startedAt}, load ${report.machine.loadAverage.before[0]} → ${report.machine.loadAverage.after[0]}), row ${rowId} ` +
    `(${row.figures.eventsPerSecond ?? row.figures.workflowsPerSecond} /s); cores at ${utilisation * 100} % utilisation, rounded up:`,
  '',
  `| process class | CPU ms / event | ${RATES.map((rate) => `cores at ${rate.toLocaleString('en')} events/s`).join(' | ')} |`,
  `| --- | --- | ${RATES.map(() => '---').join(' | ')} |`,
];
let total = 0;
for (const [label, names] of CLASSES) {
  const present = names.filter((name) => row.resources[name]);
  if (!present.length) continue;
  const ms = present.reduce((sum, name) => sum + (row.resources[name]!.cpuMsPerEvent ?? 0), 0);
  total += ms;
  const cores = RATES.map((rate) => Math.max(1, Math.ceil((rate * ms) / 1000 / utilisation)));
  lines.push(`| ${label} | ${ms.toFixed(1)} | ${cores.join(' | ')} |`);
}
const totalCores = RATES.map((rate) => Math.ceil((rate * total) / 1000 / utilisation));
lines.push(
  `| **total** | **${total.toFixed(1)}** | ${totalCores.map((cores) => `**${cores}**`).join(' | ')} |`,
);
process.stdout.write(`${lines.join('\n')}\n`);
