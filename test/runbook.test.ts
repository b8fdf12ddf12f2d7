import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { addShipments } from '../src/db/shipments';
import { paymentWorkflowId } from '../src/domain/ids';
import { PROJECT_ROOT } from '../src/lib/paths';
import { paymentEvent, postWebhook, uniqueId } from '../testkit/harness';
import { useReceiver, useTestStack } from '../testkit/hooks';
import { runSettle, stackEnv } from './support/settle-cli';

/**
 * docs/operations.md is followed as written: every `settle …` line of its code blocks runs, in the
 * order of the document, against a stack where the example IDs are real events in the situations the
 * stories describe. A command the document gets wrong (an unknown option, a missing argument) fails.
 */
const RUNBOOK = readFileSync(join(PROJECT_ROOT, 'docs/operations.md'), 'utf8');

function documentedCommands(markdown: string): string[] {
  const commands: string[] = [];
  let inBlock = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) inBlock = !inBlock;
    else if (inBlock && line.startsWith('settle ')) commands.push(line.replace(/\s+#.*$/, '').trim());
  }
  return commands;
}

/** Splits a command line as a shell would for these simple lines: words, and "double-quoted" words. */
function words(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2]!);
}

const reviewShipment = uniqueId('SHP');

const carrier = useReceiver();
// The ERP refuses the ledger entry of one shipment: its event ends needs_review (compensated).
const erp = useReceiver((request) => ({
  status: request.json.shipment_id === reviewShipment ? 422 : 200,
}));
const stack = useTestStack(() => ({ config: { carrierUrl: carrier.url, erpUrl: erp.url } }));

test('every settle command in docs/operations.md runs as written', async () => {
  const commands = documentedCommands(RUNBOOK);
  assert.ok(commands.length >= 15, `found ${commands.length} commands`);

  // pay_7f3: unmatched (its shipment SHP-4821 is missing) and, once applied, refused by the ERP.
  // pay_7f4: an ID the provider reused with another payload (a conflict).
  const dir = mkdtempSync(join(tmpdir(), 'settle-runbook-'));
  const first = paymentEvent({ shipmentId: reviewShipment, type: 'payment.settled' });
  assert.equal((await postWebhook(stack, first)).status, 202);
  await stack.client.workflow.getHandle(paymentWorkflowId(first.id)).result();
  const conflictShipment = uniqueId('SHP');
  await addShipments(stack.pool, [conflictShipment]);
  const second = paymentEvent({ shipmentId: conflictShipment });
  assert.equal((await postWebhook(stack, second)).status, 202);
  await stack.client.workflow.getHandle(paymentWorkflowId(second.id)).result();
  assert.equal((await postWebhook(stack, { ...second, data: { ...second.data, amount: 1 } })).status, 409);

  const late = paymentEvent({ shipmentId: uniqueId('SHP'), type: 'payment.captured' });
  writeFileSync(join(dir, 'nightly.jsonl'), `${JSON.stringify(late)}\n`);
  writeFileSync(join(dir, 'shipments.csv'), `shipment_id\n${late.data.shipment_id}\n`);

  const substitutions: [RegExp, string][] = [
    [/^pay_7f3$/, first.id],
    [/^pay_7f4$/, second.id],
    [/^SHP-4821$/, reviewShipment],
    [/^\/reports\/.*\.jsonl$/, join(dir, 'nightly.jsonl')],
    [/^shipments\.csv$/, join(dir, 'shipments.csv')],
    [/^report\.jsonl$/, join(dir, 'report.jsonl')],
  ];
  const env = stackEnv(stack);
  for (const command of commands) {
    const args = words(command)
      .slice(1)
      .map((word) => substitutions.reduce((w, [pattern, value]) => w.replace(pattern, value), word));
    const result = await runSettle(args, env);
    // 4 is `resolve` finding nothing left open for an ID an earlier step of the story closed.
    assert.ok(
      result.code === 0 || (result.code === 4 && args[1] === 'resolve'),
      `${command}\nexit ${result.code}\n${result.stdout}\n${result.stderr}`,
    );
    assert.doesNotMatch(result.stderr, /unknown option|missing required|error:/i, command);
  }

  // The stories ended where they say: the unmatched event applied and then resolved as needs_review,
  // the batch's unmatched event applied by `replay --unmatched`, nothing left open for either.
  const list = await runSettle(['exceptions', '--json'], env);
  const open = (JSON.parse(list.stdout) as { exceptions: { event_id: string }[] }).exceptions;
  assert.deepEqual(
    open.filter((row) => [first.id, second.id, late.id].includes(row.event_id)),
    [],
  );
  const { rows } = await stack.pool.query<{ outcome: string }>(
    'SELECT outcome FROM claims WHERE event_id = ANY($1::text[]) ORDER BY outcome',
    [[first.id, late.id]],
  );
  assert.deepEqual(
    rows.map((row) => row.outcome),
    ['applied', 'needs_review'],
  );
});
