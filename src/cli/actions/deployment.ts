import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import {
  DeploymentError,
  describeDeployment,
  describeDeploymentVersion,
  setCurrentVersion,
  setRampingVersion,
  waitDrained,
  type DeploymentVersionDetail,
  type DeploymentView,
} from '../../app/deployments';
import { parseDuration } from '../../domain/duration';
import { stopping } from '../../lib/shutdown';
import { CliError, commandConfig, output } from '../context';

/** Runs `fn` on a Temporal client and the deployment named by --deployment or SETTLE_DEPLOYMENT_NAME. */
async function withDeployment<T>(
  command: Command,
  fn: (client: Client, deploymentName: string) => Promise<T>,
): Promise<T> {
  const { config } = commandConfig();
  const deploymentName =
    (command.parent?.opts<{ deployment?: string }>().deployment ?? '') || config.deploymentName;
  const { connectClient } = await import('../../client.js');
  const client = await connectClient(config);
  try {
    return await fn(client, deploymentName);
  } catch (error) {
    if (error instanceof DeploymentError) throw new CliError(error.message);
    throw error;
  } finally {
    await client.connection.close().catch(() => {});
  }
}

export async function describe(buildId: string | undefined, options: { json?: boolean }, command: Command) {
  if (buildId) {
    const version = await withDeployment(command, (client, name) =>
      describeDeploymentVersion(client, name, buildId),
    );
    output(options.json, version, renderVersion);
    return;
  }
  const view = await withDeployment(command, describeDeployment);
  output(options.json, view, renderDeployment);
}

export async function ramp(
  buildId: string | undefined,
  percent: string | undefined,
  options: { stop?: boolean; json?: boolean },
  command: Command,
) {
  if (options.stop ? buildId !== undefined : buildId === undefined || percent === undefined) {
    throw new CliError('give a build ID and a percentage (`ramp 1.5.0 10`), or `--stop` alone');
  }
  const percentage = percent === undefined ? 0 : Number(percent);
  if (!options.stop && !(/^\d+(\.\d+)?$/.test(percent!) && percentage <= 100)) {
    throw new CliError(`the percentage must be a number from 0 to 100, not ${percent}`);
  }
  const view = await withDeployment(command, async (client, name) => {
    await setRampingVersion(client, name, options.stop ? null : buildId!, percentage);
    return describeDeployment(client, name);
  });
  output(options.json, view, renderDeployment);
}

export async function setCurrent(buildId: string, options: { json?: boolean }, command: Command) {
  const view = await withDeployment(command, async (client, name) => {
    await setCurrentVersion(client, name, buildId);
    return describeDeployment(client, name);
  });
  output(options.json, view, renderDeployment);
}

export async function waitForDrained(
  buildId: string,
  options: { timeout: string; json?: boolean },
  command: Command,
) {
  const timeoutMs = parseDuration(options.timeout);
  if (timeoutMs === undefined) throw new CliError('--timeout must be a duration such as 30m or 2h');
  const version = await withDeployment(command, (client, name) =>
    waitDrained(client, name, buildId, { timeoutMs, signal: stopping }),
  );
  output(options.json, version, renderVersion);
}

function renderDeployment(view: DeploymentView): string {
  const lines = [
    `deployment  ${view.deployment}`,
    `current     ${view.current_build_id ?? 'none (new runs go to unversioned workers)'}`,
    `ramping     ${view.ramping ? `${view.ramping.build_id} at ${view.ramping.percentage} %` : 'none'}`,
    '',
    'build                         status     drainage   created',
    ...view.versions.map(
      (v) =>
        `${v.build_id.padEnd(30)}${v.status.padEnd(11)}${(v.drainage ?? '-').padEnd(11)}${v.created_at ?? '-'}`,
    ),
  ];
  return lines.join('\n');
}

function renderVersion(v: DeploymentVersionDetail): string {
  return [
    `version     ${v.deployment} build ${v.build_id}`,
    `status      ${v.status}${v.status === 'ramping' ? ` (${v.ramp_percentage} %)` : ''}`,
    `drainage    ${v.drainage ?? '-'}${v.drainage_checked_at ? ` (checked ${v.drainage_checked_at})` : ''}`,
    `created     ${v.created_at ?? '-'}`,
    ...v.task_queues.map(
      (q) => `queue       ${q.name} (${q.type})   backlog ${q.backlog === null ? '-' : q.backlog}`,
    ),
  ].join('\n');
}
