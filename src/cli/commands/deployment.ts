import type { Command } from 'commander';

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
      (await import('../actions/deployment.js')).describe(buildId, options, command),
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
      ) => (await import('../actions/deployment.js')).ramp(buildId, percent, options, command),
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
      (await import('../actions/deployment.js')).setCurrent(buildId, options, command),
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
      (await import('../actions/deployment.js')).waitForDrained(buildId, options, command),
    );
}
