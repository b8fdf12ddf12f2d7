import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { DeterminismViolationError } from '@temporalio/workflow';
import { Worker } from '@temporalio/worker';
import { parsePayloadKeys } from '../src/config/payload-keys';
import { settleDataConverter } from '../src/temporal/data-converter';
import { REPLAY_SPAN_SINKS } from '../src/tracing/tracing';
import { installTemporalRuntime } from '../src/worker-runtime/create-worker';
import { workflowBundlePath } from '../src/worker-runtime/workflow-bundle';

const HISTORIES = join(__dirname, 'histories');
// The current version's histories (`npm run record-histories`). Once a version is deployed, a change to
// the commands a workflow emits goes behind patched(), and the histories recorded before it move into a
// subfolder named for the change (the patch's ID), so that runs started before a deploy keep replaying
// after it.
const histories = readdirSync(HISTORIES, { recursive: true, encoding: 'utf8' })
  .filter((name) => name.endsWith('.json'))
  .sort()
  .map((name) => ({
    workflowId: name.replace(/\.json$/, ''),
    history: JSON.parse(readFileSync(join(HISTORIES, name), 'utf8')),
  }));

// The payment-encrypted-* histories were written with payload encryption on, under this fixture key;
// the others in plain JSON, which the same data converter reads as it is.
const fixtureKeys = parsePayloadKeys(readFileSync(join(HISTORIES, 'payload-keys.txt'), 'utf8'));
if ('problem' in fixtureKeys) throw new Error(`test/histories/payload-keys.txt: ${fixtureKeys.problem}`);
const dataConverter = settleDataConverter({ payloadKeys: fixtureKeys.keys });

installTemporalRuntime();

test('recorded histories are committed for every workflow and scenario', () => {
  const names = histories.map((h) => h.workflowId);
  for (const expected of [
    'payment-applied-delivered',
    'payment-saga-compensated',
    'payment-lost-ack-retried',
    'payment-delivery-retried',
    'reminder-delivered',
    'reminder-cancelled',
    'payment-encrypted-applied-delivered',
    'payment-traced-applied-delivered',
    'purge-completed',
    'recovery-sweep-completed',
    'payment-invalid-input',
    'reminder-invalid-input',
    'record-invalid-input/payment-invalid-input',
  ]) {
    assert.ok(names.includes(expected), `test/histories has no ${expected}.json`);
  }
  const encrypted = histories.find((h) => h.workflowId === 'payment-encrypted-applied-delivered')!;
  const input = encrypted.history.events[0].workflowExecutionStartedEventAttributes.input.payloads[0];
  assert.equal(Buffer.from(input.metadata.encoding, 'base64').toString(), 'binary/encrypted');
  // Started with tracing on: the start carries the trace's context, which the run's spans continue.
  const traced = histories.find((h) => h.workflowId === 'payment-traced-applied-delivered')!;
  const header =
    traced.history.events[0].workflowExecutionStartedEventAttributes.header.fields['_tracer-data'];
  assert.match(
    JSON.parse(Buffer.from(header.data, 'base64').toString()).traceparent,
    /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/,
  );
});

type PatchDetails = { payloads: { data: string }[] };
type RecordedEvent = {
  markerRecordedEventAttributes?: { markerName: string; details: Record<string, PatchDetails> };
};

/** The patch IDs whose markers a recorded history carries. */
function patchesIn(history: { events: RecordedEvent[] }): string[] {
  return history.events.flatMap(({ markerRecordedEventAttributes: marker }) => {
    if (marker?.markerName !== 'core_patch') return [];
    const payload = marker.details['patch-data']?.payloads[0];
    assert.ok(payload, 'a patch marker without its patch data');
    return [(JSON.parse(Buffer.from(payload.data, 'base64').toString()) as { id: string }).id];
  });
}

// `npm run record-histories` rewrites the top level, so the runs of an older shape live only in a
// subfolder named for the patch that superseded them, and replay its old branch: a history there that
// carries the patch's marker replays the new branch, and the old one would go untested.
test("a history in a patch's subfolder was recorded before that patch", () => {
  const recorded = histories.map(({ workflowId, history }) => ({ workflowId, patches: patchesIn(history) }));
  const patches = new Set(recorded.flatMap((run) => run.patches));
  const checked = new Set<string>();
  for (const { workflowId, patches: carried } of recorded) {
    const folder = workflowId.includes('/') ? workflowId.split('/')[0] : undefined;
    if (folder === undefined || !patches.has(folder)) continue;
    checked.add(folder);
    assert.ok(!carried.includes(folder), `${workflowId} carries the marker of ${folder}`);
  }
  for (const folder of [
    'exceptions-only-view',
    'reconcile-and-deliver',
    'coalesce-search-attributes',
    'record-invalid-input',
  ]) {
    assert.ok(
      checked.has(folder),
      `test/histories/${folder}/ holds no history of the runs before that patch`,
    );
  }
});

test('the workflow bundle the worker runs replays every recorded history deterministically', async () => {
  const failures: string[] = [];
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: { codePath: await workflowBundlePath() }, dataConverter },
    histories,
  )) {
    if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
  }
  assert.deepEqual(failures, []);
});

// Tracing is switched on and off by configuration, so a run started with it off may be replayed by a
// worker with it on, and the reverse: settle's workflow tracing interceptors (the traced bundle) add
// headers and spans but no command. The test above replays payment-traced-applied-delivered (recorded
// with tracing on) untraced; this one replays every history, traced or not, with tracing on.
test('the traced workflow bundle (tracing on) replays every recorded history deterministically', async () => {
  const failures: string[] = [];
  for await (const result of Worker.runReplayHistories(
    {
      workflowBundle: { codePath: await workflowBundlePath({ traced: true }) },
      dataConverter,
      sinks: REPLAY_SPAN_SINKS,
    },
    histories,
  )) {
    if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
  }
  assert.deepEqual(failures, []);
});

test('a workflow changed incompatibly fails the replay of every payment history (the guard works)', async () => {
  const payments = histories.filter((h) => h.workflowId.startsWith('payment-'));
  assert.ok(payments.length >= 8, `only ${payments.length} payment histories`);
  const verdicts: Record<string, string> = {};
  for await (const result of Worker.runReplayHistories(
    { workflowsPath: require.resolve('./support/nondeterministic-workflows'), dataConverter },
    payments,
  )) {
    verdicts[result.workflowId] = result.error?.constructor.name ?? 'replayed';
  }
  assert.deepEqual(
    verdicts,
    Object.fromEntries(payments.map((h) => [h.workflowId, DeterminismViolationError.name])),
  );
});
