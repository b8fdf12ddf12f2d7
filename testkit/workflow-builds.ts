/**
 * A next build's workflow code and what a run's history and description say about its build: for the
 * rollout and reset tests and the topology run's rollout (which loads no test harness).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';

/** The next build's workflows module: the released code with a change no released history replays. */
export const NEXT_BUILD_WORKFLOWS = join(__dirname, 'next-version-workflows.ts');

/** Bundles a workflows module (a next build's code) into a file a worker can run. */
export async function bundleWorkflows(workflowsPath: string): Promise<string> {
  const { code } = await bundleWorkflowCode({ workflowsPath, logger: quietLogger });
  const path = join(mkdtempSync(join(tmpdir(), 'settle-next-build-')), 'workflows.js');
  writeFileSync(path, code);
  return path;
}

const quietLogger = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error() {},
};

/**
 * The build a run is on, and how it follows a rollout, as Temporal describes it, in `settle inspect`'s
 * words (`pinned`, `auto_upgrade`), read here on its own so the checks do not lean on the code they check.
 */
export async function runVersion(
  handle: WorkflowHandle,
): Promise<{ buildId: string | undefined; behavior: 'pinned' | 'auto_upgrade' | undefined }> {
  const { raw } = await handle.describe();
  const info = raw.workflowExecutionInfo?.versioningInfo;
  const behavior = info?.behavior
    ? ([undefined, 'pinned', 'auto_upgrade'] as const)[info.behavior]
    : undefined;
  return { buildId: info?.deploymentVersion?.buildId ?? undefined, behavior };
}

/**
 * The history's workflow task failures (a nondeterminism error is one), and whether its first command
 * is a timer: the next build's payment code (next-version-workflows.ts) ran it, not the released code
 * (whose first command is the reconcile's marker).
 */
export async function historyFacts(
  handle: WorkflowHandle,
): Promise<{ workflowTaskFailures: string[]; nextBuildCode: boolean }> {
  const events = (await handle.fetchHistory()).events ?? [];
  const firstTask = events.findIndex((e) => e.workflowTaskCompletedEventAttributes);
  return {
    workflowTaskFailures: events
      .filter((e) => e.workflowTaskFailedEventAttributes)
      .map((e) => e.workflowTaskFailedEventAttributes?.failure?.message ?? 'workflow task failed'),
    nextBuildCode: firstTask >= 0 && events[firstTask + 1]?.timerStartedEventAttributes != null,
  };
}
