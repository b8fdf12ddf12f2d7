import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { PROJECT_ROOT } from '../src/lib/paths';
import { waitFor } from '../testkit/harness';
import { useTestStack } from '../testkit/hooks';
import { ledgerOf, paymentStatusOf } from './support/providers';
import { runSettle, stackEnv } from './support/settle-cli';

// docs/providers.md, "Try it end to end", followed step by step: its exports configure the stack,
// its files are written as shown, its `settle …` lines are run as written, in order.
const doc = readFileSync(join(PROJECT_ROOT, 'docs/providers.md'), 'utf8');
const walkthrough = doc.slice(doc.indexOf('## Try it end to end'));
type Step = { kind: 'export'; name: string; value: string } | { kind: 'run'; args: string[] };
const steps: Step[] = [];
const files = new Map<string, string>();
for (const block of walkthrough.matchAll(/```(\S+)(?: (\S+))?\n([\s\S]*?)```/g)) {
  const [, lang, name, body] = block;
  if (lang === 'jsonl') files.set(name!, body!);
  if (lang !== 'sh') continue;
  for (const line of body!.split('\n').filter(Boolean)) {
    const exported = /^export (\w+)=(.+)$/.exec(line);
    // The page generates its secrets (no example value works as one): `$(openssl rand -hex N)`.
    const value = exported?.[2]!.replace(/\$\(openssl rand -hex (\d+)\)/g, (_, bytes: string) =>
      randomBytes(Number(bytes)).toString('hex'),
    );
    if (exported) steps.push({ kind: 'export', name: exported[1]!, value: value! });
    else if (line.startsWith('settle ')) steps.push({ kind: 'run', args: line.split(' ').slice(1) });
    else throw new Error(`docs/providers.md: a sh line the walkthrough cannot run: ${line}`);
  }
}
const exported: Record<string, string> = Object.fromEntries(
  steps.flatMap((step) => (step.kind === 'export' ? [[step.name, step.value]] : [])),
);
const exportedValue = (name: string): string => {
  const value = exported[name];
  if (!value) throw new Error(`docs/providers.md exports no ${name}`);
  return value;
};

const cwd = mkdtempSync(join(tmpdir(), 'settle-providers-docs-'));
const stack = useTestStack({
  config: {
    stripeWebhookSecrets: [exportedValue('SETTLE_STRIPE_WEBHOOK_SECRETS')],
    adyenHmacKeys: [exportedValue('SETTLE_ADYEN_HMAC_KEYS')],
    adyenBasicAuth: exportedValue('SETTLE_ADYEN_BASIC_AUTH'),
  },
});
before(() => {
  for (const [name, body] of files) writeFileSync(join(cwd, name), body);
});
after(() => rmSync(cwd, { recursive: true, force: true }));

test('docs/providers.md: the walkthrough’s commands run as written and do what the page says', async () => {
  const runs = steps.filter((step): step is Extract<Step, { kind: 'run' }> => step.kind === 'run');
  assert.deepEqual(
    runs.map((step) => step.args.slice(0, 3).join(' ')),
    [
      'simulate --provider stripe',
      'simulate --provider stripe',
      'import --provider stripe',
      'import --provider stripe',
      'simulate --provider adyen',
      'simulate --provider adyen',
      'import --provider adyen',
    ],
  );
  assert.deepEqual([...files.keys()], ['stripe-events.jsonl', 'adyen-notifications.jsonl']);
  const env = stackEnv(stack, { ...exported, SETTLE_GATEWAY_URL: stack.gatewayUrl });

  const outputs: string[] = [];
  for (const step of runs) {
    const run = await runSettle(step.args, env, undefined, cwd);
    assert.equal(run.code, 0, `settle ${step.args.join(' ')}\n${run.stdout}\n${run.stderr}`);
    outputs.push(run.stdout);
    // The page's commands run one after another; an import refers to the simulated payment, so the
    // simulated events are reconciled before the next step (as a person reading the output would wait).
    if (step.args[0] === 'simulate') {
      const provider = step.args[2]!;
      await waitFor(
        `the simulated ${provider} payment to be captured`,
        async () => (await paymentStatusOf(stack, `SHP-docs-${provider}-1`)) === 'captured',
      );
    }
  }
  const [stripeFirst, stripeAgain, stripeImport, stripeImportAgain, adyenFirst, adyenAgain, adyenImport] =
    outputs;
  assert.match(stripeFirst!, /responses {2}accepted 2/);
  assert.match(stripeAgain!, /responses {2}duplicate 2/);
  assert.match(stripeImport!, /accepted {3}1/);
  assert.match(stripeImport!, /ignored {4}1/);
  assert.match(stripeImportAgain!, /duplicate {2}1/);
  assert.match(adyenFirst!, /responses {2}\[accepted\] 2/);
  assert.match(adyenAgain!, /responses {2}\[accepted\] 2/);
  assert.match(adyenImport!, /accepted {3}1/);

  for (const provider of ['stripe', 'adyen']) {
    const shipmentId = `SHP-docs-${provider}-1`;
    const ledger = await waitFor(`${shipmentId}'s refund`, async () => {
      const entries = await ledgerOf(stack, shipmentId);
      return entries.some((entry) => entry.kind === 'refund') && entries;
    });
    assert.equal(await paymentStatusOf(stack, shipmentId), 'refunded');
    assert.deepEqual(
      ledger.map((entry) => [entry.kind, entry.amount]),
      [
        ['capture', 1000],
        ['refund', 1000],
      ],
    );
  }
  const adyenRefund = await stack.pool.query('SELECT 1 FROM events WHERE event_id = $1', [
    'adyen:DOCSREFUND000001:REFUND:true',
  ]);
  assert.equal(adyenRefund.rowCount, 1);
});
