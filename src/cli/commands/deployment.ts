import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import type { DeploymentVersionDetail, DeploymentView } from '../../temporal/deployments';
import { parseDuration } from '../../domain/duration';
import { stopping } from '../../lib/shutdown';
import { CliError } from '../errors';

/** `settle deployment …`: roll a new build of the workers out (docs/operations.md, "Worker Deployments"). */
export function registerDeployment(program: Command) {
  const deployment = program
    .command('deployment')
    .description(
      'Roll out a new build of the workers (SETTLE_BUILD_ID) in the Temporal Worker Deployment ' +
        'SETTLE_DEPLOYMENT_NAME: ramp it, make it current, and see when an old build has drained ' +
        '(no run pinned to it: its workers can stop). The same as `temporal worker deployment …`.',
    )
    .option('--deployment <name>', 'the Worker Deployment (default: SETTLE_DEPLOYMENT_NAME, or settle)');

  deployment
    .command('describe')
    .description('Show the current and ramping builds and every version with its status and drainage.')
    .argument('[build-id]', 'one version in detail: its task queues and their backlogs')
    .option('--json', 'print it as JSON')
    .action(async (buildId: string | undefined, options: { json?: boolean }, command: Command) =>
      describe(buildId, options, command),
    );

  deployment
    .command('ramp')
    .description(
      'Send a percentage of new payment runs to a build (the rest to the current one). `--stop` ends ' +
        'the ramp (a rollback): runs already started on that build are pinned there and finish there.',
    )
    .argument('[build-id]', 'the build to ramp')
    .argument('[percent]', 'from 0 to 100')
    .option('--stop', 'end the ramp: every new run goes to the current build')
    .option('--json', 'print the deployment afterwards as JSON')
    .action(
      async (
        buildId: string | undefined,
        percent: string | undefined,
        options: { stop?: boolean; json?: boolean },
        command: Command,
      ) => ramp(buildId, percent, options, command),
    );

  deployment
    .command('set-current')
    .description(
      'Make a build current: new runs, and reminder runs at their next task, go to it; pinned payment ' +
        'runs finish on the build that started them. Refused for a build no worker polls.',
    )
    .argument('<build-id>', 'the build to make current')
    .option('--json', 'print the deployment afterwards as JSON')
    .action(async (buildId: string, options: { json?: boolean }, command: Command) =>
      setCurrent(buildId, options, command),
    );

  deployment
    .command('wait-drained')
    .description(
      'Wait until no open run is pinned to a build (status drained), then exit 0: its workers can stop. ' +
        'Exits 1 naming the status if it does not drain within --timeout.',
    )
    .argument('<build-id>', 'the old build')
    .option('--timeout <duration>', 'how long to wait', '1h')
    .option('--json', 'print the version as JSON once drained')
    .action(async (buildId: string, options: { timeout: string; json?: boolean }, command: Command) =>
      waitForDrained(buildId, options, command),
    );
}

// The implementation: what it needs beyond commander is imported when the command runs.

/** Runs `fn` on a Temporal client and the deployment named by --deployment or SETTLE_DEPLOYMENT_NAME. */
async function withDeployment<T>(
  command: Command,
  fn: (client: Client, deploymentName: string) => Promise<T>,
): Promise<T> {
  const [{ DeploymentError }, { commandConfig }] = await Promise.all([
    import('../../temporal/deployments.js'),
    import('../context.js'),
  ]);
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

async function describe(buildId: string | undefined, options: { json?: boolean }, command: Command) {
  const [{ describeDeployment, describeDeploymentVersion }, { output }] = await Promise.all([
    import('../../temporal/deployments.js'),
    import('../context.js'),
  ]);
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

async function ramp(
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
  const [{ describeDeployment, setRampingVersion }, { output }] = await Promise.all([
    import('../../temporal/deployments.js'),
    import('../context.js'),
  ]);
  const view = await withDeployment(command, async (client, name) => {
    await setRampingVersion(client, name, options.stop ? null : buildId!, percentage);
    return describeDeployment(client, name);
  });
  output(options.json, view, renderDeployment);
}

async function setCurrent(buildId: string, options: { json?: boolean }, command: Command) {
  const [{ describeDeployment, setCurrentVersion }, { output }] = await Promise.all([
    import('../../temporal/deployments.js'),
    import('../context.js'),
  ]);
  const view = await withDeployment(command, async (client, name) => {
    await setCurrentVersion(client, name, buildId);
    return describeDeployment(client, name);
  });
  output(options.json, view, renderDeployment);
}

async function waitForDrained(
  buildId: string,
  options: { timeout: string; json?: boolean },
  command: Command,
) {
  const timeoutMs = parseDuration(options.timeout);
  if (timeoutMs === undefined) throw new CliError('--timeout must be a duration such as 30m or 2h');
  const [{ waitDrained }, { output }] = await Promise.all([
    import('../../temporal/deployments.js'),
    import('../context.js'),
  ]);
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
