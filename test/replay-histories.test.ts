import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { DeterminismViolationError } from '@temporalio/workflow';
import { Worker } from '@temporalio/worker';
import { installTemporalRuntime } from '../src/worker/run';
import { workflowBundlePath } from '../src/worker/workflow-bundle';

const HISTORIES = join(__dirname, 'histories');
// The current version's histories, and in subfolders those recorded before a patched() change: runs
// started before a deploy must keep replaying after it.
const histories = readdirSync(HISTORIES, { recursive: true, encoding: 'utf8' })
  .filter((name) => name.endsWith('.json'))
  .sort()
  .map((name) => ({
    workflowId: name.replace(/\.json$/, ''),
    history: JSON.parse(readFileSync(join(HISTORIES, name), 'utf8')),
  }));

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
    'before-operator-view/payment-applied-delivered',
    'before-operator-view/payment-saga-compensated',
    'before-local-first/payment-applied-delivered',
    'before-local-first/payment-lost-ack-retried',
  ]) {
    assert.ok(names.includes(expected), `test/histories has no ${expected}.json`);
  }
});

test('the workflow bundle the worker runs replays every recorded history deterministically', async () => {
  const failures: string[] = [];
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: { codePath: await workflowBundlePath() } },
    histories,
  )) {
    if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
  }
  assert.deepEqual(failures, []);
});

test('a workflow changed incompatibly fails the replay (the guard works)', async () => {
  const [first] = histories;
  assert.ok(first);
  await assert.rejects(
    Worker.runReplayHistory(
      { workflowsPath: require.resolve('./support/nondeterministic-workflows') },
      first.history,
      first.workflowId,
    ),
    DeterminismViolationError,
  );
});
